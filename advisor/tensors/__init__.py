"""Tensors: the base both ``advisor compare`` and the evidence probes stand on.

Nothing here knows about comparison CSVs, facts or rules; ``compare/`` and ``evidence/`` import
from here and never from each other.

==================  ==========================================================================
``dump_names``      what a dump file name says (Ascend numpy, TF golden, msprobe namings)
``inventory``       a folder's dumps from names and ``.npy`` headers only
``dtypes``          GE dtype names and the float16 overflow flag
``lineage``         loading a dump; fingerprints: which target op produced each input
``fusion``          which golden ops a fused target op stands for (ONNX, GE text, JSON, names)
``pairing``         the rows of a comparison and the distinct tensor pairs they need
``npyfile``         an ``.npy`` dump read in chunks into reused buffers
``running``         running sums over chunks (float64 sums, float32 KL), bounded memory
``metrics``         the msaccucmp metrics from those sums: the one implementation every caller uses
==================  ==========================================================================
"""
