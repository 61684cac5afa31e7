"""Imports the modules named on the command line, one after another, and uses each a little.

What a trainer's first lines do: the shared libraries these modules load (libtorch, OpenCV,
HDF5, BLAS, ...) run their constructors at import and their destructors at exit. Everything it
prints is deterministic, so a run under libmemwatch.so can be compared with a run without it.
"""
import importlib
import sys


def use_torch(torch):
    return torch.ones(3, 3).matmul(torch.arange(3.0)).sum().item()


def use_numpy(numpy):
    return float(numpy.linalg.det(numpy.array([[2.0, 1.0], [1.0, 3.0]])))


def use_scipy(scipy):
    import scipy.linalg
    return float(scipy.linalg.norm([3.0, 4.0]))


def use_skimage(skimage):
    import numpy
    import skimage.filters
    image = numpy.zeros((16, 16))
    image[8, 8] = 1.0
    return round(float(skimage.filters.gaussian(image, sigma=1).sum()), 6)


def use_h5py(h5py):
    import numpy
    with h5py.File("in-memory.h5", "w", driver="core", backing_store=False) as f:
        f["x"] = numpy.arange(10)
        return int(f["x"][()].sum())


def use_cv2(cv2):
    import numpy
    image = numpy.ones((8, 8), numpy.float32)
    return float(cv2.GaussianBlur(image, (3, 3), 0).sum())


USES = {"torch": use_torch, "numpy": use_numpy, "scipy": use_scipy, "skimage": use_skimage,
        "h5py": use_h5py, "cv2": use_cv2}

for name in sys.argv[1:]:
    module = importlib.import_module(name)
    print(name, getattr(module, "__version__", "?"), USES[name](module), flush=True)
