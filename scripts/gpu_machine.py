"""What the programs run on a lent GPU machine share: the shim built there (scripts/device-check
--build) and the libcupti that PyTorch's wheels bring. `python3 scripts/gpu_machine.py cupti`
prints that library's path, or nothing (scripts/device-check asks so)."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def built_shim():
    """libmemwatch.so, built here by scripts/device-check --build; its path."""
    return subprocess.run([os.path.join(ROOT, "scripts", "device-check"), "--build"],
                          capture_output=True, text=True, check=True).stdout.strip()


def wheel_cupti():
    """The libcupti of PyTorch's nvidia-cuda-cupti wheel, or None."""
    try:
        import nvidia
    except ImportError:
        return None
    for base in nvidia.__path__:
        for lib in sorted(glob.glob(os.path.join(base, "**", "libcupti.so*"), recursive=True)):
            return lib
    return None


if __name__ == "__main__" and sys.argv[1:] == ["cupti"]:
    print(wheel_cupti() or "")
