"""The facts rules can match: kinds, fields, types and meanings.

This is the contract between the fact builders and rule packs; `advisor rules validate` checks every
field a rule names against it (and suggests the nearest name for a typo). Keep it in step with
builder.py: tests assert that every fact the builder produces is described here.
"""

from __future__ import annotations

from .schema_calibration import CALIBRATION_FIELDS
from .schema_evidence import CONFIG_FIELDS, EVIDENCE_FIELDS, LAYER_FIELDS, OVERFLOW_RECORD_FIELDS
from .schema_post import POST_FIELDS
from .schema_types import BOOL, NUMBER, STRING
from .schema_verify import ALTERNATIVE_FIELDS, FIDELITY_FIELDS, FIX_CHECK_FIELDS, REPLAY_FIELDS, RESIDUAL_FIELDS

__all__ = ["BOOL", "FACT_FIELDS", "NUMBER", "STRING", "fact_kinds"]

FACT_FIELDS: dict[str, dict[str, tuple[str, str]]] = {
    "network": {
        "id": (STRING, "always 'network'"),
        "fact": (STRING, "always 'network'"),
        "rows": (NUMBER, "rows in the comparison result"),
        "ops": (NUMBER, "target ops in the comparison"),
        "compared_tensors": (NUMBER, "tensors with both sides present"),
        "deviating_tensors": (NUMBER, "tensors the judgement rule tensor-deviates flags (outside their dtype's "
                                      "limits)"),
        "deviating_ops": (NUMBER, "ops with at least one deviating output tensor"),
        "entry_points": (NUMBER, "ops where error enters (inputs agree, outputs do not)"),
        "overflow_ops": (NUMBER, "ops with an overflowing or non-finite FP16 output"),
        "nonfinite_ops": (NUMBER, "ops whose target output holds inf or NaN"),
        "input_ops": (NUMBER, "ops taken as network inputs"),
        "input_deviates": (BOOL, "a network input already disagrees"),
        "dtype": (STRING, "the most common target dtype (float16, float32, bfloat16, int8...)"),
        "compute_dtype": (STRING, "the least precise float/int8 target dtype: thresholds follow it"),
        "has_fp16": (BOOL, "any target tensor is float16"),
        "format": (STRING, "format of the comparison result (msaccucmp, ...)"),
        "output_source": (STRING, "where the network output was read: Node_Output, last_op, "
                                  "last_compared_op or none"),
        "output_op": (STRING, "the op taken as network output (from the Node_Output row's golden dump file "
                             "name, else the op itself)"),
        "output_cosine": (NUMBER, "cosine of the network output"),
        "output_red": (NUMBER, "relative Euclidean distance of the network output"),
        "output_deviates": (BOOL, "a network output tensor deviates (tensor-deviates)"),
        "output_nonfinite": (BOOL, "the target's network output holds inf or NaN (whether or not the reference's "
                                   "does)"),
        "output_scale": (NUMBER, "|norm(target) / norm(reference) - 1| of the network output (statistics "
                                 "comparisons)"),
        "output_count": (NUMBER, "how many network outputs (msprobe: forward outputs no later call takes)"),
        "output_known": (BOOL, "the network output was compared (not NaN)"),
        "output_line": (NUMBER, "source line of the output row"),
        "first_deviating_index": (NUMBER, "op index of the first deviating op"),
        "first_deviating_op": (STRING, "name of the first deviating op"),
        "notable_ops": (NUMBER, "ops where error enters, an overflow starts, the inputs and outputs, mismatches: "
                                "ranked first under --max-op-facts (op facts are the ops some rule of the run may "
                                "match)"),
        "op_facts": (NUMBER, "op facts handed to the rules"),
        "op_facts_left_out": (NUMBER, "ops some rule may match, left out by --max-op-facts (0: the rules saw every "
                                      "one)"),
        "overflow_entries": (NUMBER, "ops where an FP16 overflow starts while their inputs agree"),
        "keep_fp32_all": (STRING, "what to keep in FP32 for every such overflow, comma-joined"),
        "output_ops": (STRING, "the ops producing the network outputs, comma-joined (with --graph and no "
                               "Node_Output row: the graph outputs; msprobe: forward outputs no later call takes)"),
        "unmatched_ops": (NUMBER, "ops dumped on one side only (every row NPU-only or golden-only)"),
        "npu_only_ops": (NUMBER, "ops with target rows only (no golden data)"),
        "golden_only_ops": (NUMBER, "ops with golden rows only (no target data)"),
        "npu_only_names": (STRING, "the first NPU-only ops, comma-joined"),
        "golden_only_names": (STRING, "the first golden-only ops, comma-joined"),
        "npu_only_inserted": (NUMBER, "NPU-only ops the graph marks as inserted by the compiler (--graph)"),
        "graph_known": (BOOL, "a model graph was given (--graph) and shares op names with the comparison"),
        "graph_format": (STRING, "format of that graph: onnx, ge-text, om-json..."),
        "graph_side": (STRING, "target (compiled graph, joined on op_name) or golden (joined on golden names)"),
        "graph_nodes": (NUMBER, "ops in the graph"),
        "graph_ops_matched": (NUMBER, "compared ops found in the graph"),
        "fusion_passes_effective": (STRING, "fusion passes that rewrote the graph (--fusion), comma-joined"),
        "fusion_passes_effective_count": (NUMBER, "how many fusion passes rewrote the graph (--fusion)"),
        "judged_tensors": (NUMBER, "compared tensors with a usable metric (or checksum): what a verdict speaks for"),
        "unjudged_tensors": (NUMBER, "compared tensors without any usable metric (reference all zeros, shapes differ, "
                                     "no statistics): never counted as within thresholds"),
        "unjudged_list": (STRING, "the first unjudged tensors with the reason, '; '-joined"),
        "training": (BOOL, "a training comparison: backward rows, or parameters/buffers among the inputs (msprobe)"),
        "argument_rows": (NUMBER, "rows that are arguments of a call (scalar, bool, str), not tensors"),
        "arguments_compared": (NUMBER, "argument rows with a value on both sides"),
        "differing_arguments": (NUMBER, "argument rows whose two values differ"),
        "counter_rows": (NUMBER, "rows of in-place counter updates (BatchNorm num_batches_tracked): never judged"),
        "checksums_compared": (NUMBER, "MD5/CRC mode: rows with a checksum on both sides"),
        "checksums_differ": (NUMBER, "MD5/CRC mode: rows whose two checksums differ"),
        "differing_parameters": (NUMBER, "parameter tensors that differ before the first backward row"),
        "parameters_compared": (NUMBER, "parameter tensors compared (statistics or checksum on both sides)"),
        "differing_buffers": (NUMBER, "buffers (running mean/var) that differ: listed, never a cause by themselves"),
        "differing_parameter_list": (STRING, "those tensors with the statistic that differs, '; '-joined"),
        "tool_precision_error_ops": (NUMBER, "ops the comparing tool marked failing: msquickcmp IsPrecisionError, "
                                             "msprobe Result error / Accuracy Reached No (absent without marks)"),
        "tool_first_precision_error_op": (STRING, "the first op msquickcmp marked IsPrecisionError"),
        "tool_first_precision_error_index": (NUMBER, "op index of that op"),
        "tool_output_ops": (STRING, "the ops msquickcmp marked IsOutputNode (the network outputs), comma-joined"),
    },
    "op": {
        "id": (STRING, "'op:<index>'"),
        "fact": (STRING, "always 'op'"),
        "index": (NUMBER, "op index (execution order) of the target op"),
        "op": (STRING, "target op name"),
        "op_type": (STRING, "target op type"),
        "golden_ops": (STRING, "golden ops this op was fused from, comma-joined"),
        "direction": (STRING, "forward or backward (msprobe training comparisons)"),
        "dtype": (STRING, "target dtype of the op's outputs"),
        "position": (NUMBER, "0-based position in execution order"),
        "source_line": (NUMBER, "first source line of the op's rows"),
        "tensors": (NUMBER, "compared tensors (rows) of the op"),
        "in_cosine": (NUMBER, "worst (lowest) cosine over the op's input tensors"),
        "out_cosine": (NUMBER, "worst cosine over the op's output tensors"),
        "in_red": (NUMBER, "worst relative Euclidean distance over input tensors"),
        "out_red": (NUMBER, "worst relative Euclidean distance over output tensors"),
        "in_scale": (NUMBER, "worst |rms(target)/rms(golden) - 1| over input tensors"),
        "out_scale": (NUMBER, "worst |rms(target)/rms(golden) - 1| over output tensors"),
        "out_max_abs_error": (NUMBER, "largest max absolute error over output tensors"),
        "out_kl": (NUMBER, "largest KL divergence over output tensors"),
        "in_state_rel": (NUMBER, "largest difference of a printed statistic over input tensors, relative to the "
                                 "tensor's scale"),
        "out_state_rel": (NUMBER, "largest difference of a printed statistic (max, min, mean, norm) over output "
                                  "tensors, relative to the tensor's scale (max |x|; the norm for the norm)"),
        "is_input": (BOOL, "the op is a network input"),
        "is_output": (BOOL, "the op produces the network output"),
        "input_source": (STRING, "how inputs were identified: user, op_type, first_op"),
        "inputs_known": (BOOL, "the comparison has rows for the op's inputs"),
        "inputs_from": (STRING, "where inputs_agree was read: input_rows, graph (its graph predecessors' outputs) "
                                "or previous_op (the op before it in execution order)"),
        "inputs_agree": (BOOL, "no input of the op deviates (tensor-deviates, on its input rows, else its graph "
                               "predecessors' outputs, else the op before's) and no parameter or argument differs"),
        "inputs_identical": (BOOL, "the op's data inputs are identical on both sides (same dtype and values, "
                                   "checksums or every printed statistic) and its parameters and arguments agree"),
        "inputs_identical_by": (STRING, "what shows the inputs identical, the weakest of them: values, checksum "
                                        "or statistics (statistics cannot see the order of the values)"),
        "out_deviates": (BOOL, "an output tensor deviates (tensor-deviates; on identical inputs also "
                               "tensor-beyond-own-rounding)"),
        "error_enters": (BOOL, "outputs deviate while inputs agree: local error"),
        "hidden_entry": (BOOL, "the network's first disagreement shows on this op's inputs"),
        "local_drop": (NUMBER, "input cosine minus output cosine where error enters"),
        "previous_entry_index": (NUMBER, "on an entry (error_enters or hidden_entry): op index of the entry before it"),
        "next_entry_index": (NUMBER, "on an entry: op index of the next entry (absent for the last one)"),
        "clean_streak": (NUMBER, "on an entry: the longest run of ops between it and the next entry (or the end) "
                                 "whose inputs and outputs agree"),
        "recovered_cosine": (NUMBER, "on an entry: the highest output cosine that propagation.clean_ops consecutive "
                                     "agreeing ops hold between it and the next entry (absent: no such run)"),
        "inputs_overflow": (BOOL, "the op's inputs overflow (read like inputs_agree)"),
        "out_overflow": (BOOL, "an FP16 output overflows (OverFlow flag or inf/NaN)"),
        "overflow_enters": (BOOL, "outputs overflow while inputs do not"),
        "out_nonfinite": (BOOL, "a target output holds inf or NaN"),
        "out_reference_nonfinite": (BOOL, "a reference output holds inf or NaN where the target's does not"),
        "input_deviates": (BOOL, "the op is a network input and it already disagrees"),
        "fp16_sensitive": (BOOL, "the op (or an op fused into it) is FP16-sensitive"),
        "downstream_deviating": (NUMBER, "deviating ops after this one"),
        "inserted_norm_op": (STRING, "a network input: the target-only op right after it that normalises it "
                                     "(knowledge/ops/input_normalizing.yaml, e.g. MagicMind's inserted BatchNorm)"),
        "inserted_norm_type": (STRING, "that op's type"),
        "keep_fp32": (STRING, "the overflowing op and the FP16-sensitive ops after it that stay out of range, "
                              "comma-joined (golden names)"),
        "output_deviates": (BOOL, "the network output deviates (copied from the network fact)"),
        "graph_known": (BOOL, "the op was found in the model graph (--graph)"),
        "fused_from": (STRING, "the original ops fused into this one, comma-joined (--graph)"),
        "fusion_passes": (STRING, "fusion passes that produced the op, comma-joined (target graph only)"),
        "is_fused": (BOOL, "more than one original op went into this one (--graph)"),
        "narrowing_cast": (BOOL, "a Cast that narrows precision (float32 -> float16/bfloat16/int32...) (--graph)"),
        "cast_from": (STRING, "a Cast's input dtype"),
        "cast_to": (STRING, "a Cast's output dtype"),
        "before_first_entry": (BOOL, "the op runs before the first op where error enters (--graph)"),
        "training": (BOOL, "copied from the network fact: a training comparison"),
        "param_first": (BOOL, "the first op (execution order) with a parameter that differs at the start"),
        "param_differs": (BOOL, "a parameter input of the op differs before the first backward row"),
        "param_tensor": (STRING, "that tensor (the most different one of the op)"),
        "param_name": (STRING, "its name from knowledge/training/tensor_roles.yaml (weight, bias, running_mean...)"),
        "param_role": (STRING, "parameter or buffer"),
        "param_stat": (STRING, "the statistic that differs most: norm, max, min, mean, or md5"),
        "param_npu": (NUMBER, "that statistic on the target"),
        "param_golden": (NUMBER, "that statistic on the reference"),
        "param_rel_diff": (NUMBER, "|target - reference| of that statistic relative to the tensor's scale "
                                   "(max |x|; the norm itself for the norm)"),
        "params_differing": (NUMBER, "differing parameter/buffer tensors of the op"),
        "differing_parameters": (NUMBER, "on the param_first op: differing parameter tensors in the network"),
        "parameters_compared": (NUMBER, "on the param_first op: parameter tensors compared in the network"),
        "differing_buffers": (NUMBER, "on the param_first op: differing buffers in the network"),
        "differing_parameter_share": (NUMBER, "on the param_first op: differing_parameters / parameters_compared"),
        "differing_parameter_list": (STRING, "on the param_first op: those tensors and statistics, '; '-joined"),
        "arg_differs": (BOOL, "an argument of the call (scalar, bool, str) differs between the runs"),
        "arg_tensor": (STRING, "the row of that argument"),
        "arg_name": (STRING, "its name (eps, training...) or 'input <slot>'"),
        "arg_npu": (STRING, "its value on the target, as printed"),
        "arg_golden": (STRING, "its value on the reference, as printed"),
        "args_differing": (NUMBER, "differing arguments of the op"),
        "mode_argument": (STRING, "a module whose output depends on a mode it does not dump at level L0 (Dropout: "
                                  "training), from knowledge/training/tensor_roles.yaml"),
        "mode_npu_passes": (BOOL, "on a mode_argument op: the target's output equals its input (a Dropout in eval "
                                  "mode); absent when the statistics do not say"),
        "mode_golden_passes": (BOOL, "on a mode_argument op: the reference's output equals its input"),
        "mode_differs": (BOOL, "on a mode_argument op: one side passes its input through and the other does not"),
        "bits_first": (BOOL, "MD5/CRC mode: the first op whose data, output or gradient checksum differs"),
        "bits_tensor": (STRING, "that tensor"),
        "bits_role": (STRING, "its role: data, output or gradient"),
        "bits_npu_dtype": (STRING, "its target dtype"),
        "bits_golden_dtype": (STRING, "its reference dtype"),
        "bits_dtype_changed": (BOOL, "the two sides have different dtypes (bits cannot agree)"),
        "tool_precision_error": (BOOL, "the comparing tool marked a row of the op failing (msquickcmp "
                                       "IsPrecisionError, msprobe Result error / Accuracy Reached No; absent without "
                                       "marks); the first such op is always an op fact"),
        "tool_output_node": (BOOL, "msquickcmp marked a row of the op IsOutputNode: it produces a network output"),
    },
    "finding": {
        "id": (STRING, "finding id"),
        "fact": (STRING, "always 'finding'"),
        "rule": (STRING, "id of the rule that emitted it"),
        "pack": (STRING, "pack of that rule"),
        "kind": (STRING, "finding kind"),
        "severity": (STRING, "error, warning or info"),
        "root_cause": (BOOL, "the finding names a root cause"),
        "op": (STRING, "op name"),
        "op_type": (STRING, "op type"),
        "index": (NUMBER, "op index"),
        "confidence": (NUMBER, "0..1"),
        "inputs_agree": (BOOL, "the inputs of the finding's op agree (absent for network findings)"),
        "direction": (STRING, "forward or backward, when the finding's op has one (msprobe)"),
    },
    # --- tensor: one per comparison row, judged column by column by the judgement rules -----------
    # (rules with 'judges:', rules/core/judgement): never asserted into the engine, so no other rule
    # matches them. "Use" is a measured value over the limit of the row's dtype (knowledge/thresholds.yaml;
    # backward rows by the gradient profile where it has one): 1.0 is the limit itself.
    "tensor": {
        "fact": (STRING, "always 'tensor'"),
        "comparable": (BOOL, "both sides of the row are present (a row of one side only is never judged)"),
        "ill_conditioned": (BOOL, "the reference norm is below knobs.rows.ill_conditioned of the largest among its "
                                  "op's tensors: cosine and relative errors say nothing, the drift judges"),
        "statistics_only": (BOOL, "only printed statistics measure the tensor (no cosine, distance or norm ratio; "
                                  "or a float32 statistics comparison whose extrema are printed)"),
        "cosine_use": (NUMBER, "(1 - cosine) / (1 - the dtype's cosine limit)"),
        "distance_use": (NUMBER, "relative Euclidean distance / the dtype's limit"),
        "scale_use": (NUMBER, "|rms(target) / rms(reference) - 1| (or of the norms) / the dtype's scale limit"),
        "drift_use": (NUMBER, "ill-conditioned rows: the absolute difference relative to the op's largest norm / "
                              "the dtype's distance limit"),
        "statistics_use": (NUMBER, "the printed statistics' largest difference against the tensor's scale / the "
                                   "dtype's scale limit"),
        "own_cosine_use": (NUMBER, "cosine_use against the identical_inputs limits (one op's own rounding)"),
        "own_distance_use": (NUMBER, "distance_use against the identical_inputs limits"),
        "own_scale_use": (NUMBER, "scale_use against the identical_inputs limits"),
        "own_drift_use": (NUMBER, "drift_use against the identical_inputs limits"),
        "own_statistics_use": (NUMBER, "statistics_use against the identical_inputs limits"),
        "target_nonfinite": (BOOL, "the target holds inf or NaN where the reference does not"),
        "reference_nonfinite_only": (BOOL, "the reference holds inf or NaN where the target does not"),
        "collapsed": (BOOL, "the target is all zero where the reference is not"),
        "integer_differs": (BOOL, "both sides are integer (or bool) tensors and a printed statistic (max, min, mean, "
                                  "norm) differs"),
    },
    # --- tensor evidence (advisor/evidence/facts.py): one fact per probed tensor ---------------
    "evidence": EVIDENCE_FIELDS,
    "layer": LAYER_FIELDS,
    "config": CONFIG_FIELDS,
    "overflow_record": OVERFLOW_RECORD_FIELDS,
    # --- checks on the CPU (advisor/verify, advisor run --verify) ------------------------------
    "fidelity": FIDELITY_FIELDS,
    "replay": REPLAY_FIELDS,
    "fix_check": FIX_CHECK_FIELDS,
    "alternative_check": ALTERNATIVE_FIELDS,
    "residual": RESIDUAL_FIELDS,
    "calibration": CALIBRATION_FIELDS,
    # --- advisor post (advisor/post/measure.py): detections past the network's output ---------
    **POST_FIELDS,
}


def fact_kinds() -> list[str]:
    return list(FACT_FIELDS)
