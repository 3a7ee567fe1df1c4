"""The words of an ``advisor post`` report (en, zh), merged into labels.TEXTS: the terminal summary,
the boxes plot and the fitted maps, and the labels of its summary numbers and inputs."""

from __future__ import annotations

POST_TEXTS: dict[str, tuple[str, str]] = {
    "term.post_header": ("advisor {version}: {golden} vs {target} ({golden_count} and {target_count} detections, "
                         "{images} images)",
                         "advisor {version}：{golden} 与 {target}（{golden_count} 与 {target_count} 个检测框，"
                         "{images} 张图像）"),
    "term.post_consistent": ("the two post-processings agree.", "两侧后处理结果一致。"),
    "term.post_unexplained": ("the detections differ, and no rule named why.", "检测结果不同，但没有规则给出原因。"),
    "post.title": ("Detections of the two runs", "两次运行的检测结果"),
    "post.plot_caption": ("Image {image}: golden boxes (solid), target boxes as written (dashed), golden boxes "
                          "through the best mapping, {mapping} (dotted); lines join paired boxes.",
                          "图像 {image}：标杆检测框（实线）、目标检测框原样（虚线）、"
                          "经最佳映射 {mapping} 变换后的标杆检测框（点线）；连线连接配对的检测框。"),
    "post.legend_golden": ("golden", "标杆"),
    "post.legend_target": ("target", "目标"),
    "post.legend_mapped": ("golden, mapped", "标杆（映射后）"),
    "post.mappings": ("Box mappings tried", "尝试的检测框映射"),
    "post.mapping": ("mapping", "映射"),
    "post.fit": ("fit (median IoU)", "拟合度（IoU 中位数）"),
    "post.affine": ("Free affine fit on image {image}: target x = {ax} · x + {bx}, target y = {ay} · y + {by} "
                    "(fit {fit}).",
                    "图像 {image} 上的自由仿射拟合：目标 x = {ax} · x + {bx}，"
                    "目标 y = {ay} · y + {by}（拟合度 {fit}）。"),
    "post.class_pairs": ("Class ids of paired detections", "配对检测框的类别 id"),
    "post.golden_id": ("golden id", "标杆 id"),
    "post.target_id": ("target id", "目标 id"),
    "post.pairs": ("pairs", "配对数"),
    "post.class_ap": ("Per-class AP against the annotations", "对照标注的逐类 AP"),
    "post.class": ("class", "类别"),
    "post.golden_ap": ("golden AP", "标杆 AP"),
    "post.target_ap": ("target AP", "目标 AP"),
    "network.images": ("Images", "图像数"),
    "network.golden_count": ("Golden detections", "标杆检测框"),
    "network.target_count": ("Target detections", "目标检测框"),
    "network.matched": ("Paired detections", "配对的检测框"),
    "network.golden_only": ("Golden only", "仅标杆有"),
    "network.target_only": ("Target only", "仅目标有"),
    "network.pairing": ("Paired by", "配对方式"),
    "network.score_pairs": ("Pairs with identical scores", "得分相同的配对"),
    "network.mapping": ("Best box mapping", "最佳检测框映射"),
    "network.mapping_fit": ("Its fit (median IoU)", "其拟合度（IoU 中位数）"),
    "network.class_agree_share": ("Same class id", "类别 id 相同的比例"),
    "input.golden": ("golden detections", "标杆检测结果"),
    "input.target": ("target detections", "目标检测结果"),
    "input.annotations": ("annotations", "标注"),
    "input.images_info": ("images info", "图像信息"),
    "override.input_size": ("Network input size", "网络输入尺寸"),
}

# What an advisor post report says in place of the comparison's verdict words.
POST_OVERRIDES: dict[str, tuple[str, str]] = {
    "headline.consistent": ("Consistent: the target's detections match the golden detections",
                            "一致：目标端的检测结果与标杆一致"),
    "summary.consistent": ("Detections pair up with the same classes and boxes: the post-processing is equivalent on "
                           "these images.", "检测框一一配对，类别与位置相同：在这些图像上后处理是等价的。"),
    "headline.unexplained": ("No root cause found: the detections differ, but no rule explains it",
                             "未找到根因：检测结果不同，但没有规则能够解释"),
    "unexplained.advice": ("Compare the two post-processings step by step (decode, threshold, NMS, box mapping, class "
                           "ids) on one image's raw outputs.",
                           "在同一幅图像的原始输出上逐步比较两侧后处理（解码、阈值、NMS、框映射、类别 id）。"),
    "consistent.advice": ("No action needed: the target's detections match the golden detections.",
                          "无需处理：目标端的检测结果与标杆一致。"),
}
