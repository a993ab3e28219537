"""The peers' TensorBoard event files: TensorBoard's own writer with bench's tags (see
include/trainbench/report/tensorboard.h), so one `tensorboard --logdir` shows bench's and the
peers' curves under the same names."""
import json
import math
import sys
import time

from bench_export import EXPORT

# bench's tags by the peers' names for them (report/tensorboard.h, exported by
# `bench --help --json`): the peers' curves and bench's share tags by construction.
TB_TAGS = EXPORT["tensorboard"]


class Board:
    """TensorBoard event files in the peer's run folder, through TensorBoard's own writer
    (tensorboard.summary.writer, the one torch.utils.tensorboard uses), with bench's tags: the
    flags and env as text, the HParams session, every step's loss, each window's figures and
    the final metrics. Each window's records are flushed when it ends."""

    def __init__(self, res, enabled, flags):
        self.w = None
        if not enabled:
            return
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.plugins.hparams import plugin_data_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError:
            print("warning: no tensorboard package; no event files (scripts/install_deps.sh "
                  "installs it)", file=sys.stderr)
            return
        self.event_pb2, self.summary_pb2, self.hp = event_pb2, summary_pb2, plugin_data_pb2
        self.w = EventFileWriter(res.dir, flush_secs=3600, filename_suffix=".peer")
        config = res.written.get("config.json", {})
        self.text("config", "```\n" + json.dumps(config, indent=2, default=str) + "\n```")
        self.text("env", "```\n" + json.dumps(res.written.get("env.json", {}), indent=2,
                                                default=str) + "\n```")
        start = self.hp.HParamsPluginData(version=0)
        start.session_start_info.start_time_secs = time.time()
        exp = self.hp.HParamsPluginData(version=0)
        for k, v in config.items():
            if k not in flags:
                continue
            val = start.session_start_info.hparams[k]
            if isinstance(v, bool):
                val.bool_value = v
            elif isinstance(v, (int, float)):
                val.number_value = float(v)
            else:
                val.string_value = str(v)
            exp.experiment.hparam_infos.add(name=k)
        for key in ("final_seq_per_s", "final_tokens_per_s", "final_valid_bpb", "final_completed"):
            exp.experiment.metric_infos.add().name.tag = TB_TAGS[key]
        self._hparams("_hparams_/experiment", 0, exp)
        self._hparams("_hparams_/session_start_info", 0, start)
        self.flush()

    def _event(self, step, value):
        self.w.add_event(self.event_pb2.Event(wall_time=time.time(), step=step,
                                              summary=self.summary_pb2.Summary(value=[value])))

    def _hparams(self, tag, step, data):
        meta = self.summary_pb2.SummaryMetadata(
            plugin_data=self.summary_pb2.SummaryMetadata.PluginData(
                plugin_name="hparams", content=data.SerializeToString()))
        self._event(step, self.summary_pb2.Summary.Value(tag=tag, metadata=meta))

    def text(self, tag, markdown):
        from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2
        meta = self.summary_pb2.SummaryMetadata(
            plugin_data=self.summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                        tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                        string_val=[markdown.encode()])
        self._event(0, self.summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor))

    def scalar(self, key, step, value):
        if self.w is not None and value is not None and math.isfinite(value):
            self._event(step, self.summary_pb2.Summary.Value(tag=TB_TAGS[key],
                                                             simple_value=value))

    def flush(self):
        if self.w is not None:
            self.w.flush()

    def close(self, status, step):
        if self.w is None:
            return
        end = self.hp.HParamsPluginData(version=0)
        end.session_end_info.status = 1 if status == "completed" else 2
        end.session_end_info.end_time_secs = time.time()
        self._hparams("_hparams_/session_end_info", step, end)
        self.w.close()


