"""The lines every benchmark prints first: the command, the versions that matter, the machine and its load."""

import importlib.metadata
import os
import platform
import sys


def run_header(packages=("tensorflow", "tensorflow-text", "keras", "keras-hub", "numpy")):
    """[command line, versions line, machine line]; `load_average()` again at the end shows interference.

    Example:
    >>> print("\\n".join(run_header()))
    command: python -m bench.bench_create_data --num_workers=2
    python 3.11.7, tensorflow 2.21.0, tensorflow-text 2.21.1, keras 3.15.1, keras-hub 0.32.0, numpy 2.4.6
    cpu: Intel(R) Xeon(R) ..., 2 cores; load average at start: 0.35 0.80 1.02
    """
    versions = []
    for package in packages:
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    return [
        f"command: {command_line()}",
        f"python {platform.python_version()}, {', '.join(versions)}",
        f"cpu: {cpu_name()}, {os.cpu_count()} cores; load average at start: {load_average()}",
    ]


def command_line():
    """The command as typed: `python -m bench.NAME ...` for a module, `python PATH ...` for a script."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    program = ["-m", spec.name] if spec is not None and spec.name != "__main__" else sys.argv[:1]
    return " ".join([os.path.basename(sys.executable)] + program + sys.argv[1:])


def cpu_name():
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                    platform.processor())


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
