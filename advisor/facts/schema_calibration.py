"""The ``calibration`` fact (advisor/evidence/calibration.py): an int8 build's calibrated activation
ranges against the golden activations on real inputs."""

from __future__ import annotations

from .schema_types import NUMBER, STRING

CALIBRATION_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "always 'calibration'"),
    "fact": (STRING, "always 'calibration'"),
    "index": (NUMBER, "op index of the earliest op in the comparison whose tensor range was compared"),
    "op": (STRING, "that op"),
    "table": (STRING, "the calibration table the ranges came from, and its format"),
    "ranges": (NUMBER, "calibrated ranges in the build config"),
    "tensors_compared": (NUMBER, "ranges with a golden dump of their tensor"),
    "tensors_without_dump": (NUMBER, "ranges whose tensor has no golden dump"),
    "width_ratio_median": (NUMBER, "median of calibrated width / golden width (max - min) over the compared tensors"),
    "width_ratio_low": (NUMBER, "its 10th percentile"),
    "width_ratio_high": (NUMBER, "its 90th percentile"),
    "deep_width_ratio_median": (NUMBER, "the median over the tensors after the network input"),
    "clipped_share": (NUMBER, "share of compared tensors whose golden values fall outside the calibrated range "
                              "(more than knob calibration.clip_share of them)"),
    "worst_tensor": (STRING, "the tensor with the largest share of golden values outside its range"),
    "worst_outside": (NUMBER, "that share"),
    "input_tensor": (STRING, "the network input's range in the table"),
    "input_low": (NUMBER, "its calibrated low"),
    "input_high": (NUMBER, "its calibrated high"),
    "golden_input_low": (NUMBER, "the golden input's minimum"),
    "golden_input_high": (NUMBER, "the golden input's maximum"),
    "input_width_ratio": (NUMBER, "calibrated input width / golden input width"),
    "input_scale": (NUMBER, "calibrated input range = input_scale * golden range + input_offset: the scale"),
    "input_offset": (NUMBER, "... and the offset (the normalisation the calibration data missed)"),
}
