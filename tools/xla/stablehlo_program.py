"""TensorFlow's exported step as a StableHLO module that every jaxlib client compiles (jax only, no TensorFlow).

jaxlib's HLO-to-StableHLO converter leaves one MHLO op in TensorFlow's step, `mhlo.copy` (the copies XLA adds for
outputs that alias arguments). The GPU client refuses it ("failed to legalize operation 'mhlo.copy'", seen on an
H200 with jaxlib 0.11.2), and so does the compile-only path; only the CPU client lowers it. A copy is replaced by
an identity `stablehlo.optimization_barrier` of the same values; any other MHLO op left stops with its name.

The converter also gives every custom call (cuDNN's flash attention in a step with `model.attention: cudnn_flash`)
an empty `result_tilings` attribute, which only a newer StableHLO version than the CUDA plugin's (1.16.2 in jaxlib
0.11.2) can carry: the GPU plugin refuses the call ("failed to legalize operation 'vhlo.custom_call_v2'", seen in
an ahead-of-time XLA:GPU compile). An empty list says nothing, so it is removed.

    bytecode = stablehlo_bytecode(program_bytes)    # then client.compile_and_load(bytecode, devices, options)
"""

import re


def stablehlo_bytecode(program, keep_op_names=False):
    """The HLO module proto `program` (bytes) as StableHLO bytecode without MHLO ops. `keep_op_names`: keep the
    HLO's op names (TensorFlow's, `pretrainer/bert/layer_3/self/Softmax`) as locations, which XLA turns back into
    each compiled instruction's `op_name` (tools/xla/profile_xla_step.py groups kernels by them)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    from jaxlib import _jax

    bytecode = _jax.mlir.hlo_to_stablehlo(program)
    with jax_mlir.make_ir_context():
        text = ir.Module.parse(bytecode).operation.get_asm(print_generic_op_form=True, enable_debug_info=keep_op_names)
        text = text.replace('"mhlo.copy"(', '"stablehlo.optimization_barrier"(')
        text = re.sub(r", result_tilings = \[(?:\[\](?:, )?)*\]", "", text)
        leftover = sorted(set(re.findall(r'"(mhlo\.[a-z_]+)"', text)))
        if leftover:
            raise RuntimeError(f"MHLO ops that no jaxlib client may lower: {leftover}")
        return jax_mlir.module_to_bytecode(ir.Module.parse(text))
