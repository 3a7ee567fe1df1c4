"""The real-tool corpus: reference and target runs dumped by the real msprobe on the CPU.

A :class:`RunSpec` is one script run (network, train step or inference, precision, fault knobs);
a :class:`PairSpec` a reference run, a target run and the truth about what differs between them:
its kind and ``where``, the module whose call the fault enters (``None``: the network's input, the
first call). Each pair is dumped at every task and level the generator is asked for
(``msprobe_tool.TASKS`` x ``LEVELS``) and compared with ``msprobe compare``.

Label kinds: the corpus's own ``consistent`` and ``input_mismatch``, and four that training
comparisons need (no rule diagnoses them yet):

- ``argument_mismatch``: an API is called with another non-tensor argument (LayerNorm ``eps``,
  dropout's ``training`` left on at inference);
- ``parameter_mismatch``: one layer's weights differ (a checkpoint not loaded into that layer);
- ``step_mismatch``: the target is one optimizer step ahead (every parameter differs a little);
- ``checksum_mismatch``: MD5 mode of a precision change (bits differ from the first low-precision
  call on; nothing else to say without statistics).
"""

from __future__ import annotations

from benchmarks.scenarios.realtool_families import FAMILIES, RULE_CASE_PAIRS
from benchmarks.scenarios.realtool_spec import PairSpec, RunSpec

__all__ = ["CORPUS", "DUMP_JSON", "FIXTURES", "XLSX", "PairSpec", "RunSpec", "select"]


def _train(key: str, **setup) -> RunSpec:
    return RunSpec(f"small_convnet-train-{key}", "small_convnet", "train_step", setup=tuple(sorted(setup.items())))


TRAIN_REF = _train("reference")
EVAL_REF = RunSpec("small_convnet-eval-reference", "small_convnet", "eval")
_TRAIN = "a training step of a small conv net (BatchNorm, LayerNorm, dropout, cross-entropy, SGD momentum) " \
         "on four crops of the astronaut photo"


def _inference(network: str, key: str, **knobs) -> RunSpec:
    return RunSpec(f"{network}-inference-{key}", network, "inference", **knobs)


def _clean(network: str, ref: RunSpec, target: RunSpec, precision: str, what: str) -> PairSpec:
    return PairSpec(f"msprobe_clean_{precision}", "consistent", network, f"autocast_{precision}", ref, target,
                    description=f"{what}: float32 reference vs the same run under CPU autocast to {precision}",
                    precision=precision)


CORPUS: tuple[PairSpec, ...] = (
    # --- a training step ---
    *(_clean("small_convnet", TRAIN_REF, RunSpec(f"small_convnet-train-autocast_{p}", "small_convnet",
                                                 "train_step", autocast=p), p, _TRAIN) for p in ("bf16", "fp16")),
    PairSpec("msprobe_same_run", "consistent", "small_convnet", "rerun", TRAIN_REF, _train("rerun"),
             description=f"{_TRAIN}, run twice with the same seed (what md5 mode confirms bit for bit)"),
    PairSpec("msprobe_argument_mismatch", "argument_mismatch", "small_convnet", "layer_norm_eps", TRAIN_REF,
             _train("eps_1e-3", layer_norm_eps=1e-3), where="norm", api="Functional.layer_norm",
             description=f"{_TRAIN}; the target builds its LayerNorm with eps=1e-3 (Keras' default) "
                         "instead of PyTorch's 1e-5"),
    PairSpec("msprobe_parameter_mismatch", "parameter_mismatch", "small_convnet", "conv2_weights", TRAIN_REF,
             _train("conv2_reinit", perturbed_layer="conv2.weight"), where="conv2", api="Functional.conv2d",
             description=f"{_TRAIN}; the target's conv2 weights were not loaded from the checkpoint "
                         "(re-initialised)"),
    PairSpec("msprobe_input_mismatch", "input_mismatch", "small_convnet", "other_batch", TRAIN_REF,
             _train("batch_1", batch_index=1),
             description=f"{_TRAIN}; the target's data loader yields another batch (shuffled differently)"),
    PairSpec("msprobe_input_mismatch", "input_mismatch", "small_convnet", "flip_augmentation", TRAIN_REF,
             _train("flipped", flip=True),
             description=f"{_TRAIN}; the target leaves a horizontal-flip augmentation on"),
    PairSpec("msprobe_step_mismatch", "step_mismatch", "small_convnet", "one_step_ahead", TRAIN_REF,
             _train("step_ahead", steps_before=1), where="conv1", api="Functional.conv2d",
             description=f"{_TRAIN}; the target was dumped one optimizer step later: every parameter has "
                         "moved by one SGD update"),
    PairSpec("msprobe_argument_mismatch", "argument_mismatch", "small_convnet", "dropout_in_eval", EVAL_REF,
             RunSpec("small_convnet-eval-dropout_on", "small_convnet", "eval",
                     setup=(("dropout_in_eval", True),)),
             where="dropout", api="Functional.dropout",
             description="an inference forward of the small conv net; the target forgets model.eval() for "
                         "its dropout (training=True)"),
    # --- the generator's networks, inference ---
    *(_clean(net, _inference(net, "reference"), _inference(net, f"autocast_{p}", autocast=p), p,
             f"{net} inference") for net in ("mtcnn_onet", "crepe_tiny") for p in ("bf16", "fp16")),
    PairSpec("msprobe_input_mismatch", "input_mismatch", "mtcnn_onet", "mirrored_crop",
             _inference("mtcnn_onet", "reference"), _inference("mtcnn_onet", "mirrored", input_fault="flipped_face"),
             description="MTCNN O-Net on the astronaut's face; the target mirrors the crop"),
    PairSpec("msprobe_parameter_mismatch", "parameter_mismatch", "crepe_tiny", "conv3_weights",
             _inference("crepe_tiny", "reference"),
             _inference("crepe_tiny", "conv3_reinit", perturbed_parameter="conv3.weight"),
             where="conv3", api="Functional.conv2d",
             description="CREPE tiny on speech frames; the target's conv3 weights were re-initialised"),
    PairSpec("msprobe_argument_mismatch", "argument_mismatch", "byte_transformer", "layer_norm_eps",
             _inference("byte_transformer", "reference"),
             _inference("byte_transformer", "eps_1e-1", argument=("blocks.1.norm2", "eps", 0.1)),
             where="blocks.1.norm2", api="Tensor.__add__",
             description="2-block byte transformer; block 1's second (written-out) LayerNorm adds eps=0.1 "
                         "to the variance instead of 1e-5"),
    *FAMILIES,
)


def select(families: list[str] | None = None) -> list[PairSpec]:
    """The corpus, or the pairs of ``families``: the rule-case pairs (``RULE_CASE_PAIRS``) only when named."""
    if not families:
        return list(CORPUS)
    pairs = (*CORPUS, *RULE_CASE_PAIRS)
    known = {p.family for p in pairs}
    unknown = sorted(set(families) - known)
    if unknown:
        raise KeyError(f"unknown real-tool families {unknown}; known: {sorted(known)}")
    return [p for p in pairs if p.family in families]


#: The subset committed under tests/data/realtool: (pair name, level, task). Every kind, task and
#: level appears; the first also gets msprobe's --xlsx workbook and -da first-difference files.
#: Each is a few dozen KiB (small networks, statistics mostly).
FIXTURES: tuple[tuple[str, str, str], ...] = (
    ("msprobe_argument_mismatch__small_convnet__layer_norm_eps", "L1", "statistics"),
    ("msprobe_argument_mismatch__small_convnet__layer_norm_eps", "mix", "statistics"),
    ("msprobe_argument_mismatch__small_convnet__layer_norm_eps", "L0", "statistics"),
    ("msprobe_argument_mismatch__small_convnet__layer_norm_eps", "L1", "tensor"),
    ("msprobe_argument_mismatch__small_convnet__layer_norm_eps", "L1", "md5"),
    ("msprobe_argument_mismatch__small_convnet__dropout_in_eval", "L0", "statistics"),
    ("msprobe_argument_mismatch__byte_transformer__layer_norm_eps", "L1", "statistics"),
    ("msprobe_clean_bf16__small_convnet__autocast_bf16", "L1", "statistics"),
    ("msprobe_clean_bf16__small_convnet__autocast_bf16", "mix", "statistics"),
    ("msprobe_clean_bf16__small_convnet__autocast_bf16", "L1", "tensor"),
    ("msprobe_clean_bf16__small_convnet__autocast_bf16", "L1", "md5"),
    ("msprobe_clean_fp16__small_convnet__autocast_fp16", "L1", "statistics"),
    ("msprobe_clean_fp16__mtcnn_onet__autocast_fp16", "L1", "statistics"),
    ("msprobe_same_run__small_convnet__rerun", "L1", "md5"),
    ("msprobe_same_run__small_convnet__rerun", "L1", "statistics"),
    ("msprobe_parameter_mismatch__small_convnet__conv2_weights", "L1", "tensor"),
    ("msprobe_parameter_mismatch__small_convnet__conv2_weights", "L0", "statistics"),
    ("msprobe_parameter_mismatch__crepe_tiny__conv3_weights", "L1", "statistics"),
    ("msprobe_input_mismatch__small_convnet__other_batch", "L1", "statistics"),
    ("msprobe_input_mismatch__small_convnet__flip_augmentation", "mix", "statistics"),
    ("msprobe_input_mismatch__mtcnn_onet__mirrored_crop", "L1", "tensor"),
    ("msprobe_step_mismatch__small_convnet__one_step_ahead", "L0", "statistics"),
    ("msprobe_step_mismatch__small_convnet__one_step_ahead", "L1", "statistics"),
    # the networks and faults of realtool_families
    ("msprobe_fp16_overflow__masked_transformer__attention_logits_half", "L1", "statistics"),
    ("msprobe_fp16_overflow__masked_transformer__attention_logits_autocast", "mix", "statistics"),
    ("msprobe_fp16_overflow__detector__box_head_half", "L0", "statistics"),
    ("msprobe_fp16_overflow__mlp__logits_half", "L1", "tensor"),
    ("msprobe_clean_bf16__masked_transformer__attention_logits_bf16", "L1", "statistics"),
    ("msprobe_clean_fp16__masked_transformer__model_fp16", "L1", "statistics"),
    ("msprobe_clean_bf16__mlp__model_bf16", "L0", "statistics"),
    ("msprobe_clean_bf16__crepe_tiny__model_bf16", "L1", "statistics"),
    ("msprobe_clean_fp16__detector__model_fp16", "L1", "md5"),
    ("msprobe_problem_node__masked_transformer__sqrt_kernel_nan", "L1", "statistics"),
    ("msprobe_argument_mismatch__masked_transformer__cosine_head_eps0", "mix", "statistics"),
    ("msprobe_argument_mismatch__detector__bn_training_left_on", "L1", "statistics"),
    ("msprobe_argument_mismatch__decoder__upsample_nearest", "L1", "statistics"),
    ("msprobe_argument_mismatch__mlp__loss_reduction_sum", "L1", "statistics"),
    ("msprobe_argument_mismatch__mlp__dropout_p", "mix", "statistics"),
    ("msprobe_input_mismatch__masked_transformer__ids_off_by_one", "L1", "statistics"),
    ("msprobe_input_mismatch__masked_transformer__end_of_text_padding", "L0", "statistics"),
    ("msprobe_input_mismatch__masked_transformer__left_padding", "L1", "tensor"),
    ("msprobe_parameter_mismatch__detector__cls_head_weights", "L1", "md5"),
    ("msprobe_gradient_fault__mlp__grad_hook_fc2", "L1", "statistics"),
    ("msprobe_gradient_fault__mlp__grad_hook_fc2", "L0", "statistics"),
)


#: Scenarios also measured from msprobe's ``--xlsx`` workbook (folder ``..._xlsx``, label
#: ``comparison`` the .xlsx): (pair name, level, task). The workbook holds the CSV's rows; the
#: advisor must read it the same way (``Diff`` cells, inf/NaN statistics, percentages).
XLSX: tuple[tuple[str, str, str], ...] = (
    ("msprobe_fp16_overflow__masked_transformer__attention_logits_half", "L1", "statistics"),
    ("msprobe_fp16_overflow__masked_transformer__attention_logits_half", "mix", "tensor"),
    ("msprobe_fp16_overflow__detector__box_head_half", "L1", "statistics"),
    ("msprobe_clean_bf16__masked_transformer__attention_logits_bf16", "L1", "statistics"),
    ("msprobe_argument_mismatch__detector__bn_training_left_on", "L1", "statistics"),
    ("msprobe_argument_mismatch__decoder__upsample_nearest", "L1", "statistics"),
    ("msprobe_problem_node__masked_transformer__sqrt_kernel_nan", "L1", "statistics"),
    ("msprobe_input_mismatch__masked_transformer__ids_off_by_one", "L0", "md5"),
)

#: Scenarios also measured from the two ``dump.json`` msprobe compared (folder ``..._dumpjson``:
#: ``reference/dump.json``, ``target/dump.json``; ``advisor run --bench ... --target ...``).
DUMP_JSON: tuple[tuple[str, str, str], ...] = (
    ("msprobe_fp16_overflow__masked_transformer__attention_logits_half", "L1", "statistics"),
    ("msprobe_fp16_overflow__mlp__logits_half", "L1", "statistics"),
    ("msprobe_clean_bf16__masked_transformer__attention_logits_bf16", "L1", "statistics"),
    ("msprobe_clean_bf16__mlp__model_bf16", "mix", "statistics"),
    ("msprobe_argument_mismatch__detector__bn_training_left_on", "L1", "statistics"),
    ("msprobe_argument_mismatch__decoder__upsample_nearest", "L1", "statistics"),
    ("msprobe_argument_mismatch__mlp__loss_reduction_sum", "L1", "statistics"),
    ("msprobe_problem_node__masked_transformer__sqrt_kernel_nan", "L1", "statistics"),
    ("msprobe_input_mismatch__masked_transformer__ids_off_by_one", "L1", "statistics"),
    ("msprobe_gradient_fault__mlp__grad_hook_fc2", "mix", "statistics"),
)
