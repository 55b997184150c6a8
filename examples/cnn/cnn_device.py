"""Where the example trainer runs: an NVIDIA GPU (CUDA), an Ascend NPU (torch_npu, CANN) or the CPU.

One small layer so train_cnn.py asks once and then speaks of `accelerator.device`, `.backend`,
`.scaler(...)`: on Ascend the device is `npu:<local rank>`, collectives go over HCCL (NCCL's
counterpart), mixed precision uses autocast with device type "npu" and torch_npu's GradScaler, and the
generator states are the NPU's. torch_npu registers `torch.npu` when it is imported (Ascend Extension
for PyTorch, README "Quick Verification": `import torch_npu`, `torch.npu.is_available()`); it is only
importable where CANN's libraries are (the bootstrap sources set_env.sh into the trainer's environment).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

KINDS = ("auto", "cpu", "cuda", "npu")
BACKENDS = {"cuda": "nccl", "npu": "hccl", "cpu": "gloo"}


class DeviceError(ValueError):
    """The requested device cannot be used here; the message names the option or variable."""


def npu_module(torch) -> Optional[Any]:
    """`torch.npu` when torch_npu is installed and an NPU is visible; None otherwise."""
    try:
        import torch_npu  # noqa: F401  (registers the npu device type and torch.npu)
    except ImportError:
        return None
    npu = getattr(torch, "npu", None)
    return npu if npu is not None and npu.is_available() else None


@dataclass(frozen=True)
class Accelerator:
    kind: str  # cuda | npu | cpu
    device: Any  # torch.device
    module: Any  # torch.cuda, torch.npu, or None on the CPU

    @property
    def backend(self) -> str:
        return BACKENDS[self.kind]

    @property
    def accelerated(self) -> bool:
        return self.kind != "cpu"

    @property
    def channels_last(self) -> bool:
        # NHWC is the fast layout for cuDNN's convolutions; the NPU's native layouts are its own.
        return self.kind == "cuda"

    def scaler(self, torch, enabled: bool):
        """The GradScaler of this device (fp16 mixed precision)."""
        if self.kind == "npu":
            try:
                return torch.amp.GradScaler("npu", enabled=enabled)
            except (RuntimeError, ValueError):  # a torch older than the device-generic GradScaler
                import torch_npu
                return torch_npu.npu.amp.GradScaler(enabled=enabled)
        return torch.amp.GradScaler("cuda", enabled=enabled and self.kind == "cuda")

    def rng_states(self) -> list:
        return self.module.get_rng_state_all() if self.module is not None else []

    def set_rng_states(self, states: list) -> None:
        if self.module is not None and states and len(states) == self.module.device_count():
            self.module.set_rng_state_all(states)


def choose(torch, requested: str, local_rank: int) -> Accelerator:
    """The accelerator for `--device` (auto: CUDA, else an NPU, else the CPU) and this process's rank."""
    if requested not in KINDS:
        raise DeviceError(f"--device {requested}: allowed {', '.join(KINDS)}")
    cuda = torch.cuda if torch.cuda.is_available() else None
    npu = npu_module(torch) if requested in ("auto", "npu") and cuda is None else None
    if requested == "cuda" and cuda is None:
        raise DeviceError("--device cuda: no CUDA device is visible to this process")
    if requested == "npu" and npu is None:
        raise DeviceError("--device npu: no Ascend NPU is visible (torch_npu not importable, or CANN's set_env.sh"
                          " not sourced, or npu-smi sees no card)")
    kind = "cpu" if requested == "cpu" else "cuda" if cuda is not None else "npu" if npu is not None else "cpu"
    if kind == "cpu":
        return Accelerator("cpu", torch.device("cpu"), None)
    module = cuda if kind == "cuda" else npu
    if local_rank >= module.device_count():
        raise DeviceError(f"environment variable LOCAL_RANK={local_rank}: only {module.device_count()}"
                          f" {kind.upper()} devices are visible")
    device = torch.device(kind, local_rank)
    module.set_device(device)
    if kind == "cuda":
        torch.backends.cudnn.benchmark = True
    return Accelerator(kind, device, module)
