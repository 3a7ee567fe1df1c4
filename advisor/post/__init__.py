"""``advisor post``'s measurements: two runs' detections paired (by identical scores, or by overlap
once mapped), the named box mappings and a free affine fit, what happened to class ids, the per-class
AP against annotations, and what each run's threshold and NMS kept. Numbers only: the ``post`` rule
pack (rules/post/) judges them."""
