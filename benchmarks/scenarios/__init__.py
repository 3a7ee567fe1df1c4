"""Deterministic accuracy-debugging scenarios from real networks run twice on the CPU.

A scenario runs a real network (MTCNN P/R/O-Net and CREPE tiny with their trained weights, a small
byte-level transformer) on a real input twice: a float32 golden run, and a target run that
emulates an NPU (ATC-style fusion, target-only Cast/TransData ops, FP16/BF16 rounding) with one
injected fault. Both runs are dumped with the vendor file names, compared like msaccucmp into a
``result_<timestamp>.csv``, and labelled with the true root cause; a self-check verifies that each
scenario shows the signature its label promises.

Modules: ``networks`` and ``inputs`` (real models and data), ``cases`` (network + input per seed),
``graph`` (fx tracing), ``emulation`` (target graph and precision policy), ``faults``, ``catalog``
(the corpus), ``dumps``, ``compare``, ``onnx_export``, ``checks``, ``scenario`` (one directory),
``cli``.
"""
