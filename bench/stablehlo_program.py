"""TensorFlow's exported step as a StableHLO module that every jaxlib client compiles (jax only, no TensorFlow).

jaxlib's HLO-to-StableHLO converter leaves one MHLO op in TensorFlow's step, `mhlo.copy` (the copies XLA adds for
outputs that alias arguments). The GPU client refuses it ("failed to legalize operation 'mhlo.copy'", seen on an
H200 with jaxlib 0.11.2), and so does the compile-only path; only the CPU client lowers it. A copy is replaced by
an identity `stablehlo.optimization_barrier` of the same values; any other MHLO op left stops with its name.

    bytecode = stablehlo_bytecode(program_bytes)    # then client.compile_and_load(bytecode, devices, options)
"""

import re


def stablehlo_bytecode(program):
    """The HLO module proto `program` (bytes) as StableHLO bytecode without MHLO ops."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    from jaxlib import _jax

    bytecode = _jax.mlir.hlo_to_stablehlo(program)
    with jax_mlir.make_ir_context():
        text = ir.Module.parse(bytecode).operation.get_asm(print_generic_op_form=True)
        text = text.replace('"mhlo.copy"(', '"stablehlo.optimization_barrier"(')
        leftover = sorted(set(re.findall(r'"(mhlo\.[a-z_]+)"', text)))
        if leftover:
            raise RuntimeError(f"MHLO ops that no jaxlib client may lower: {leftover}")
        return jax_mlir.module_to_bytecode(ir.Module.parse(text))
