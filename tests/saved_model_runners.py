"""Running a SavedModel's signature outside this process: through TensorFlow's session-based C++ loader (the
`LoadSavedModel` path TF Serving takes, from a few lines of C) and through `saved_model_cli run`. Neither process
imports tensorflow_text, so a graph that needs its ops fails there."""

import os
import subprocess
import sys

import numpy as np
from tensorflow.core.protobuf import saved_model_pb2

HERE = os.path.dirname(os.path.realpath(__file__))
C_SOURCE = os.path.join(HERE, "c", "run_saved_model.c")
NUMPY_DTYPES = {1: np.float32, 3: np.int32}  # DataType enum values DT_FLOAT, DT_INT32


def tensorflow_dir():
    """The installed tensorflow package folder (libtensorflow_cc.so.2, include/), found without importing it."""
    import importlib.util
    return list(importlib.util.find_spec("tensorflow").submodule_search_locations)[0]


def compile_c_runner(build_dir):
    """Compiles tests/c/run_saved_model.c against the wheel's C library and headers; returns the binary's path."""
    tf_dir = tensorflow_dir()
    binary = os.path.join(build_dir, "run_saved_model")
    subprocess.run(["gcc", "-O1", "-o", binary, C_SOURCE, f"-I{tf_dir}/include", f"-L{tf_dir}",
                    "-l:libtensorflow_cc.so.2", "-l:libtensorflow_framework.so.2", f"-Wl,-rpath,{tf_dir}"],
                   check=True, capture_output=True, text=True)
    return binary


def signature_def(export_dir, signature_name):
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return saved_model.meta_graphs[0].signature_def[signature_name]


def run_with_c_loader(binary, export_dir, signature_name, inputs, work_dir):
    """Feeds `inputs` ({name: int32 array}) to the signature's tensors and fetches all its outputs, in a fresh
    process on TF's C API. Returns ({output name: array}, CompletedProcess)."""
    signature = signature_def(export_dir, signature_name)
    lines = []
    for name, value in inputs.items():
        value = np.ascontiguousarray(value, np.int32)
        path = os.path.join(work_dir, f"in_{name}.bin")
        value.tofile(path)
        lines.append(f"in {signature.inputs[name].name} int32 {value.ndim} {' '.join(map(str, value.shape))} {path}")
    for name, info in signature.outputs.items():
        lines.append(f"out {info.name} {os.path.join(work_dir, f'out_{name}.bin')}")
    process = subprocess.run([binary, export_dir], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             timeout=120)
    if process.returncode:
        return None, process
    shapes = {}
    for line in process.stdout.splitlines():
        tensor, _, _, *dims = line.split()
        shapes[tensor] = [int(d) for d in dims]
    outputs = {}
    for name, info in signature.outputs.items():
        raw = np.fromfile(os.path.join(work_dir, f"out_{name}.bin"), NUMPY_DTYPES[info.dtype])
        outputs[name] = raw.reshape(shapes[info.name])
    return outputs, process


def run_with_saved_model_cli(export_dir, signature_name, inputs, work_dir):
    """The same through `saved_model_cli run` (the session-based loader from Python, in a fresh process)."""
    paths = []
    for name, value in inputs.items():
        path = os.path.join(work_dir, f"cli_{name}.npy")
        np.save(path, np.asarray(value, np.int32))
        paths.append(f"{name}={path}")
    out_dir = os.path.join(work_dir, "cli_out")
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    process = subprocess.run(
        [cli, "run", "--dir", export_dir, "--tag_set", "serve", "--signature_def", signature_name,
         "--inputs", ";".join(paths), "--outdir", out_dir, "--overwrite"],
        capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    return {name[:-4]: np.load(os.path.join(out_dir, name)) for name in os.listdir(out_dir)}
