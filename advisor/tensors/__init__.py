"""Tensors: the base both ``advisor compare`` and the evidence probes stand on.

Nothing here knows about comparison CSVs, facts or rules; ``compare/`` and ``evidence/`` import
from here and never from each other.

==================  ==========================================================================
``dump_names``      what a dump file name says (Ascend numpy, TF golden, msprobe namings)
``inventory``       a folder's dumps from names and ``.npy`` headers only
``dtypes``          GE dtype names and the float16 overflow flag
``lineage``         loading a dump; fingerprints: which target op produced each input
``fusion_sources``  what the user gives about fusion: golden ONNX graph, target GE/OM graph, maps
``golden_graph``    the golden graph as pairing sees it: ops, tensors, readers, constants
``patterns``        decomposition patterns (knowledge/fusion_patterns.yaml) matched in it
``fusion``          which golden ops a target op computes and which golden tensor is each slot
``plan``            the rows of a comparison (labels, files, how each was paired) and the plan
``pairing``         pairing the rows, never by guess (``lineage_plan``: Ascend against TF golden)
``npyfile``         an ``.npy`` dump read in chunks into reused buffers
``running``         running sums over chunks (float64 sums, float32 KL), bounded memory
``metrics``         the msaccucmp metrics from those sums: the one implementation every caller uses
==================  ==========================================================================
"""
