"""What this machine can judge: torch, CUDA devices, MPS. The worker reports it when it
starts; ``practice/judge.py doctor`` prints it."""

from __future__ import annotations

import platform
import sys
from typing import Any


def detect() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": None,
        "numpy": None,
        "cuda": None,  # the CUDA version torch was built with, when a device is usable
        "devices": [],  # names of usable CUDA devices
        "mps": False,
    }
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        return info
    info["torch"] = torch.__version__
    try:
        if torch.cuda.is_available():
            info["cuda"] = torch.version.cuda
            info["devices"] = [torch.cuda.get_device_name(i)
                               for i in range(torch.cuda.device_count())]
    except Exception:  # a broken driver is "no CUDA", not a crash
        pass
    mps = getattr(torch.backends, "mps", None)
    info["mps"] = bool(mps is not None and mps.is_available())
    return info


if __name__ == "__main__":
    import json

    json.dump(detect(), sys.stdout, indent=2)
    print()
