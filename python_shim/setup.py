"""Copies the built libgpuslack.so into the package while it is built.

Which library: GPUSLACK_LIBRARY when set, else build/libgpuslack.so of the
checkout this folder sits in (../build). Without one the build stops with a
message saying how to make it: a package without its library would only
fail later, on another machine. Everything else is in pyproject.toml.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def built_library():
    path = os.environ.get("GPUSLACK_LIBRARY") or os.path.join(HERE, "..", "build", "libgpuslack.so")
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SystemExit(
            "gpuslack: %s not found. Build the library first (scripts/build.sh build), or point "
            "GPUSLACK_LIBRARY at a built libgpuslack.so, then pip install ./python_shim again." % path)
    return path


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if not self.dry_run:
            target = os.path.join(self.build_lib, "gpuslack", "libgpuslack.so")
            shutil.copyfile(built_library(), target)
            os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """The wheel holds a Linux shared library: tag it for the platform. It
    uses no Python C API, so any CPython from 3.9 can load it (abi3)."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution,
      options={"bdist_wheel": {"py_limited_api": "cp39"}})
