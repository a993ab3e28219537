"""bench's tables as `bench --help --json` exports them (scripts/peers/flags.json): the flags
with both presets' values, summary.json's fields and the TensorBoard scalars' tags. A test fails
when the file and bench's tables differ: regenerate it with
`build/bench --help --json > scripts/peers/flags.json`."""
import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "flags.json")) as _f:
    EXPORT = json.load(_f)
