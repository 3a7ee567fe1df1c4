"""Compare target and golden tensors and write the result the way msaccucmp does.

``msaccucmp_csv`` turns a list of :class:`~advisor.compare.msaccucmp_csv.ComparedTensor` (one target
tensor, the golden tensor it is compared with, and where both came from) into a
``result_<YYYYmmddHHMMSS>.csv`` that every msaccucmp reader, ours included, can read.
"""

from advisor.compare.msaccucmp_csv import (
    HEADER,
    ComparedTensor,
    format_shape,
    result_file_name,
    write_result_csv,
)

__all__ = ["HEADER", "ComparedTensor", "format_shape", "result_file_name", "write_result_csv"]
