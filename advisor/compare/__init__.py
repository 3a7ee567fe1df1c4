"""Compare target and golden tensors and write the result the way msaccucmp does.

``msaccucmp_csv`` turns a list of :class:`~advisor.compare.msaccucmp_csv.ComparedTensor` (one target
tensor, the golden tensor it is compared with, and where both came from) into a
``result_<YYYYmmddHHMMSS>.csv`` that every msaccucmp reader, ours included, can read.

``advisor compare`` (:func:`compare_dumps`) does it for two dump folders, streaming:

==================  ==========================================================================
``msaccucmp_csv``   the result CSV: header, row cells, number formats
``runner``          the steps of a run, the resume ``journal``, the ``progress`` bar, the CSV
``work``            ``compare_pair`` (one tensor pair -> its cells) and the ``Mapper`` that runs it
                    (local threads by default; a dask client's map for a cluster)
``tuning``          one BLAS thread and a malloc that keeps memory, in the workers
==================  ==========================================================================

Scanning, naming, fingerprints, fusion, pairing and the metrics live in :mod:`advisor.tensors`.
"""

from advisor.compare.msaccucmp_csv import (
    HEADER,
    ComparedTensor,
    format_shape,
    result_file_name,
    write_result_csv,
)
from advisor.compare.runner import CompareOptions, CompareSummary, compare_dumps

__all__ = ["HEADER", "CompareOptions", "CompareSummary", "ComparedTensor", "compare_dumps", "format_shape",
           "result_file_name", "write_result_csv"]
