#!/usr/bin/env python3
"""TensorBoard's own code reading bench's (and the peers') event files, for the tests.
  tensorboard_check.py read RUN_DIR     -> JSON {"scalars": {tag: [[step, value]...]},
      "text": [tags], "hparams": {"start": {name: value}, "end_status": N, "experiment_metrics":
      [tags]}, "files": N} through tensorboard.backend.event_processing.event_accumulator
  tensorboard_check.py serve LOGDIR TAG -> starts `tensorboard --logdir LOGDIR` on a free port,
      asks its HTTP data API for the runs and each run's TAG series, prints JSON {run: [[step,
      value]...]}, and stops it"""
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def read(run_dir):
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.plugins.hparams import plugin_data_pb2
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    acc.Reload()

    def plugin(name):
        try:
            return acc.PluginTagToContent(name)
        except KeyError:
            return {}

    out = {"scalars": {t: [[e.step, e.value] for e in acc.Scalars(t)]
                       for t in acc.Tags()["scalars"]},
           "text": sorted(plugin("text")),
           "files": sum(1 for f in os.listdir(run_dir) if f.startswith("events.out.tfevents."))}
    h = {}
    for tag, content in plugin("hparams").items():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            h["start"] = {k: getattr(v, v.WhichOneof("kind"))
                          for k, v in data.session_start_info.hparams.items()}
        if data.HasField("session_end_info"):
            h["end_status"] = data.session_end_info.status
        if data.HasField("experiment"):
            h["experiment_metrics"] = [m.name.tag for m in data.experiment.metric_infos]
    out["hparams"] = h
    print(json.dumps(out))


def free_port():
    """A port free a moment ago, drawn below the kernel's ephemeral range (32768+) as
    tests/test_util.h's free_port does, so that the outgoing connections of tests running
    alongside cannot take it before TensorBoard listens on it."""
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(20000, 32000)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("no free TCP port in [20000, 32000)")


def start_server(logdir):
    """A TensorBoard server on a port free a moment ago, and its address."""
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([exe, "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1",
                             "--load_fast=false"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def serve(logdir, tag):
    proc, base = start_server(logdir)
    starts = 1
    try:
        runs = []
        for _ in range(240):  # it loads the folder in the background
            if proc.poll() is not None:  # its port was taken after all: another one
                if starts == 3:
                    raise SystemExit(f"tensorboard exited with {proc.returncode}, three times")
                proc, base = start_server(logdir)
                starts += 1
            try:
                with urllib.request.urlopen(base + "/data/runs", timeout=5) as r:
                    runs = json.load(r)
            except OSError:
                runs = []
            if len(runs) >= 2:
                break
            time.sleep(0.5)
        series = {}
        for run in runs:
            q = urllib.parse.urlencode({"run": run, "tag": tag})
            with urllib.request.urlopen(f"{base}/data/plugin/scalars/scalars?{q}", timeout=10) as r:
                series[run] = [[p[1], p[2]] for p in json.load(r)]
        print(json.dumps(series))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    {"read": lambda: read(sys.argv[2]), "serve": lambda: serve(sys.argv[2], sys.argv[3])}[
        sys.argv[1]]()
