"""The words of the layouts without cosine (advisor/diagnosis/layout.py) in the plot, the per-op table
and the terminal, en and zh; merged into labels.TEXTS."""

from __future__ import annotations

LAYOUT_TEXTS: dict[str, tuple[str, str]] = {
    # Metric names of the statistics and checksum layouts, and the error metrics' own column names.
    "metric.max_rel_diff": ("max", "最大值"),
    "metric.min_rel_diff": ("min", "最小值"),
    "metric.mean_rel_diff": ("mean", "均值"),
    "metric.norm_rel_diff": ("norm", "范数"),
    "metric.max_abs_error": ("max absolute error", "最大绝对误差"),
    "metric.checksums_differ": ("differing checksums", "不同的校验值"),
    "metric.checksums_compared": ("checksums compared", "比对的校验值"),
    "plot.stats_forward": ("Forward calls", "前向调用"),
    "plot.stats_backward": ("Backward calls", "反向调用"),
    "plot.stats_all": ("Calls", "调用"),
    "plot.stats_legend": ("relative error of:", "相对误差："),
    "plot.threshold_norm": ("threshold (norm)", "阈值（范数）"),
    "plot.checksums": ("Checksums per call", "逐调用的校验值"),
    "plot.checksum_differ": ("checksums differ", "校验值不同"),
    "plot.checksum_same": ("checksums equal", "校验值相同"),
    "plot.checksum_summary": ("{differ} of {compared} checksums differ", "{compared} 个校验值中有 {differ} 个不同"),
    "plot.caption_statistics": (
        "This comparison holds each tensor's statistics, not the tensors: each line is the relative error "
        "|target − reference| / |reference| of one statistic of the call's outputs (the worst output).",
        "本比对只含各张量的统计量而非张量本身：每条线是调用输出（最差的输出）某一统计量的相对误差 "
        "|目标 − 标杆| / |标杆|。"),
    "plot.caption_checksum": (
        "{differ} of {compared} checksums differ; the first differing call is {first}.",
        "{compared} 个校验值中有 {differ} 个不同；第一个不同的调用是 {first}。"),
    "plot.caption_checksum_none": ("All {compared} checksums are equal.", "全部 {compared} 个校验值相同。"),
    "plot.scroll_cue": ("Scroll sideways for the rest of the plot", "左右滑动查看图的其余部分"),
    "status.differs": ("checksums differ", "校验值不同"),
    # The per-op table's columns for these layouts.
    "key_ops.max_rel_diff": ("Max rel. error", "最大值相对误差"),
    "key_ops.min_rel_diff": ("Min rel. error", "最小值相对误差"),
    "key_ops.mean_rel_diff": ("Mean rel. error", "均值相对误差"),
    "key_ops.norm_rel_diff": ("Norm rel. error", "范数相对误差"),
    "key_ops.checksums_differ": ("Differing checksums", "不同的校验值"),
    "key_ops.checksums_compared": ("Checksums compared", "比对的校验值"),
}
