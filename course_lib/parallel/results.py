"""What ``estimate`` returns: the traffic rows of a step and the Estimate (memory, times, MFU)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .. import collectives, units


@dataclass
class Traffic:
    """One kind of communication in a step: bytes each GPU sends, on which link, time and exposed time (s).

    ``collectives``: registry ids (``course_lib.collectives``) of the collectives one call runs, in
    order (empty for a point-to-point send); ``label`` is for display only.
    """

    kind: str
    collectives: tuple
    group_size: int
    link: str
    crosses_nodes: bool
    calls_per_step: int
    bytes_per_call: float
    time_s: float
    exposed_s: float
    label: str = ""

    @property
    def sent_per_gpu(self) -> float:
        """Bytes each GPU sends per step: calls x size x the collectives' busbw factors (a send: 1)."""
        factor = sum(collectives.busbw_factor(c, self.group_size) for c in self.collectives) \
            if self.collectives else 1.0
        return self.calls_per_step * self.bytes_per_call * factor

    def as_row(self) -> dict:
        """A table row: kind, collective (label), collectives (ids), group, link, calls, bytes, times."""
        return {"kind": self.kind, "collective": self.label, "collectives": self.collectives, "group": self.group_size,
                "link": self.link, "crosses_nodes": self.crosses_nodes, "calls": self.calls_per_step,
                "bytes_per_call": self.bytes_per_call, "sent_per_gpu": self.sent_per_gpu, "time_s": self.time_s,
                "exposed_s": self.exposed_s}


@dataclass
class Estimate:
    """Memory, traffic and step time for one model, system and layout. Fields in SI units."""

    model: str
    system: str
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    zero: int
    recompute: str
    micro_batch: int
    global_batch: int
    micro_batches: int
    interleave: int
    sequence_parallel: bool
    gpu_efficiency: float        # hardware FLOPs / (GPUs x compute time x BF16 peak): what the compute reached
    memory: dict                 # bytes per GPU: weights, gradients, optimizer, activations, total, capacity
    fits: bool
    traffic: list
    step_time_s: float
    compute_s: float
    bubble_s: float
    bubble_fraction: float       # (p-1)/(v m)
    tp_exposed_s: float
    pp_exposed_s: float
    dp_exposed_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float        # hardware FLOP/s per GPU, incl. recomputation, in TFLOP/s
    model_tflops_per_gpu: float  # model FLOP/s per GPU, no recomputation, in TFLOP/s
    mfu: float
    hfu: float
    notes: list = field(default_factory=list)
    ep: int = 1                  # expert-parallel ranks (inside the CP x DP ranks)
    cp: int = 1                  # context-parallel ranks
    cp_kind: str = "ring"
    shard_group: int = 0         # ZeRO-3/FSDP shard group (HSDP when smaller than cp x dp); 0 = not ZeRO-3
    ep_exposed_s: float = 0.0
    cp_exposed_s: float = 0.0
    precision: str = "bf16"      # the recipe (data/precision.json)
    fp8_dispatch: bool = False
    stages: list = field(default_factory=list)  # pp > 1: per stage, its layers, micro-batch compute (s), memory (bytes)
    pp_rule: str = "one"         # how the layers were split over the stages (layouts.PP_RULES)
    etp: int = 0                 # expert tensor parallel (an MoE; equal to tp unless folded otherwise)

    @property
    def layout(self) -> str:
        v = f" v{self.interleave}" if self.interleave > 1 else ""
        cp = f" x CP{self.cp}" + (" (Ulysses)" if self.cp_kind == "ulysses" else "") if self.cp > 1 else ""
        etp = f", ETP{self.etp}" if self.etp and self.etp != self.tp else ""
        ep = f" (EP{self.ep}{etp})" if self.ep > 1 else (f" (ETP{self.etp})" if etp else "")
        return f"TP{self.tp}{cp} x PP{self.pp}{v} x DP{self.dp}{ep}"

    @property
    def sharding(self) -> str:
        """ZeRO-n, or FSDP / HSDP (shard x replicate) for ZeRO-3."""
        if self.zero < 3:
            return f"ZeRO-{self.zero}"
        d = self.dp * self.cp
        return "ZeRO-3/FSDP" if self.shard_group == d else \
            f"HSDP (shard {self.shard_group} x replicate {d // self.shard_group})"

    def breakdown(self) -> dict:
        """Step time split into compute, bubble and exposed communication, seconds."""
        out = {"compute": self.compute_s, "pipeline bubble": self.bubble_s, "tensor-parallel comm": self.tp_exposed_s,
               "pipeline comm": self.pp_exposed_s, "data-parallel comm": self.dp_exposed_s}
        if self.ep > 1 or self.ep_exposed_s > 0:   # all-to-alls, and the experts' ETP gathers (also at ep 1)
            out["expert-parallel comm"] = self.ep_exposed_s
        if self.cp > 1:
            out["context-parallel comm"] = self.cp_exposed_s
        return out

    def stage_line(self) -> str:
        """The pipeline stages in one line: layers per stage (runs of equal stages merged), the slowest, memory."""
        runs = []
        for s in self.stages:
            if runs and runs[-1][0] == s["layers"]:
                runs[-1][1] += 1
            else:
                runs.append([s["layers"], 1])
        text = " | ".join(f"{n}" + (f" x{k}" if k > 1 else "") for n, k in runs)
        slow = max(self.stages, key=lambda s: s["micro_batch_s"])
        big = max(self.stages, key=lambda s: s["memory_bytes"])
        return (f"  stages ({self.pp_rule}): layers {text}; slowest stage {slow['stage']} "
                f"({slow['layers']} layers{' + output layer' if slow['stage'] == self.pp - 1 else ''}, "
                f"{units.format_time(slow['micro_batch_s'])} a micro-batch) sets the step; "
                f"most memory on stage {big['stage']} ({big['memory_bytes'] / units.GB:.1f} GB)")

    def exposed_by_kind(self) -> dict:
        """Exposed communication per traffic kind, seconds (the rows of ``traffic`` summed by kind)."""
        out = {}
        for t in self.traffic:
            out[t.kind] = out.get(t.kind, 0.0) + t.exposed_s
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layout"] = self.layout
        d["breakdown_s"] = self.breakdown()
        return d

    def summary(self) -> str:
        gb = units.GB
        mem = self.memory
        lines = [
            f"{self.model} on {self.gpus} GPUs ({self.nodes} x {self.system}): {self.layout}, {self.sharding}, "
            f"recompute {self.recompute}{', sequence parallel' if self.sequence_parallel else ''}"
            + ("" if self.precision == "bf16" else f", {self.precision.upper()}"
               + (" (FP8 dispatch)" if self.fp8_dispatch else "")),
            f"  batch {self.global_batch} sequences = {self.micro_batches} micro-batches of {self.micro_batch} per pipeline",
            f"  memory per GPU: weights {mem['weights'] / gb:.1f} GB, gradients {mem['gradients'] / gb:.1f} GB, "
            f"optimizer {mem['optimizer'] / gb:.1f} GB, "
            + (f"FP8 weight copies {mem['fp8_weights'] / gb:.1f} GB, " if mem.get("fp8_weights") else "")
            + f"activations {mem['activations'] / gb:.1f} GB "
            f"= {mem['total'] / gb:.1f} GB of {mem['usable'] / gb:.0f} GB usable -> {'fits' if self.fits else 'DOES NOT FIT'}",
            "  communication per step and per GPU:",
        ]
        width = max([24] + [len(t.kind) for t in self.traffic])
        for t in self.traffic:
            lines.append(f"    {t.kind:<{width}} {t.calls_per_step:>6} x {units.format_bytes(t.bytes_per_call):>9} "
                         f"{t.label:<15} over {t.link}: {units.format_time(t.time_s)} "
                         f"({units.format_time(t.exposed_s)} exposed)")
        total = self.step_time_s
        lines.append(f"  step time {units.format_time(total)}:")
        for name, value in self.breakdown().items():
            lines.append(f"    {name:<22} {units.format_time(value):>9}  {100 * value / total:5.1f} %")
        lines.append(f"  bubble (p-1)/(v m) = {self.bubble_fraction:.3f}")
        if self.stages:
            lines.append(self.stage_line())
        lines.append(f"  {self.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, {self.tflops_per_gpu:.0f} TFLOP/s per GPU "
                     f"(hardware, with recomputation), MFU {100 * self.mfu:.1f} %, HFU {100 * self.hfu:.1f} % "
                     f"[compute at {self.gpu_efficiency:.2f} of the BF16 peak on the slowest stage]")
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
