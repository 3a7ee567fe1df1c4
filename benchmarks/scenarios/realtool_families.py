"""The real-tool pairs of the four small networks (``realtool_networks``: a masked transformer, a
detector, an MLP, an upsampling decoder) and whole-model casts of O-Net and CREPE: precision with
and without FP16 overflow, NaN outputs, bool/str/float argument faults, token-id faults and
gradient-only faults of a train step. Each label follows from how the pair is built:

- whole-model ``fp16``/``bf16`` (``model.half()`` / ``.bfloat16()``) or CPU autocast against the
  float32 run, same weights: ``consistent``; with a layer whose outputs pass 65504 (the build knob
  both runs share) the FP16 target overflows there: ``fp16_overflow`` at that call (its inputs are
  finite, its output is not); the BF16 run of the same build keeps its range: ``consistent``.
  In MD5 mode every precision pair is ``checksum_mismatch`` (``realtool.label_for``);
- an argument (module attribute) changed: ``argument_mismatch`` at the call that takes it;
- another tokenisation: ``input_mismatch`` at the first call;
- the target's CPU ``sqrt`` kernel computing ``x * rsqrt(x)``: ``problem_node`` at the ``sqrt``
  call (same API, inputs and arguments; the kernel differs, as a device's would), NaN from there;
- a gradient multiplier hooked on one layer's output in a train step (the forward is bit-identical):
  ``problem_node`` at that layer's backward call, the first call of the backward pass that differs
  (``phase: backward``). No existing kind names a backward-only fault more precisely: the data show
  one backward call that differs while everything before it agrees; the gradient changes between two
  backward calls (a hook is no API), so that call's input gradient already differs.
"""

from __future__ import annotations

from benchmarks.scenarios.msprobe_tool import TASKS
from benchmarks.scenarios.realtool_spec import PairSpec, RunSpec


def _run(network: str, mode: str, key: str, **knobs) -> RunSpec:
    setup = knobs.pop("setup", {})
    return RunSpec(f"{network}-{mode}-{key}", network, mode, setup=tuple(sorted(setup.items())), **knobs)


WHAT = {
    "masked_transformer": "an encoder block over token ids of two right-padded sentences (embedding, RMS "
                          "norm, padding-masked softmax attention, GELU MLP, cosine head)",
    "detector": "a detector (three conv-BatchNorm-ReLU stages, a class head and a box head) on a crop of the "
                "astronaut photo",
    "mlp": "an MLP (three Linear layers, ReLU, dropout) on 8x8 grey patches of the photo",
    "decoder": "an upsampling decoder (strided conv encoder, bilinear Upsample, ConvTranspose2d) on two "
               "crops of the photo",
    "mtcnn_onet": "MTCNN O-Net on the astronaut's face",
    "crepe_tiny": "CREPE tiny on speech frames",
}
TRAIN = " (a training step: forward, loss, backward, SGD)"
CAST = {"fp16": "model.half()", "bf16": "model.bfloat16()"}


def _precision(network: str, precision: str, *, variant: str = "", setup: dict | None = None,
               autocast: bool = False, grown: str = "") -> PairSpec:
    """A float32 run against the same weights in ``precision``, whole model cast or autocast."""
    setup = setup or {}
    suffix = variant or f"{'autocast' if autocast else 'model'}_{precision}"
    reference = _run(network, "inference", "-".join(("reference", *sorted(setup))), setup=setup)
    knobs = {"autocast": precision} if autocast else {"cast": precision}
    target = _run(network, "inference", f"{suffix}", setup=setup, **knobs)
    how = f"CPU autocast to {precision}" if autocast else f"the whole model cast ({CAST[precision]})"
    return PairSpec(f"msprobe_clean_{precision}", "consistent", network, suffix, reference, target,
                    description=f"{WHAT[network]}{grown}: float32 vs {how}, same weights", precision=precision)


def _overflow(network: str, variant: str, setup: dict, where: str, api: str, grown: str,
              autocast: bool = False) -> PairSpec:
    pair = _precision(network, "fp16", variant=variant, setup=setup, autocast=autocast, grown=grown)
    return PairSpec("msprobe_fp16_overflow", "fp16_overflow", network, variant, pair.reference, pair.target,
                    where=where, api=api, precision="fp16",
                    description=f"{pair.description}; the FP16 output of {api} in {where} passes 65504 (inf)")


LOGITS = {"attention_logits": 1.2e5}
LOGITS_GROWN = "; its attention logits reach 1.2e5 (query/key projections scaled, as a model trained " \
               "without QK normalisation grows them): float32 keeps them, the softmax is near one-hot"
BOX = {"grow_output": ("box_head", "backbone.7", 2e5)}
BOX_GROWN = "; its last BatchNorm's outputs reach ~450 and its box head regresses offsets in pixels of a 4k " \
            "image (outputs up to 2e5)"
LOGITS_MLP = {"grow_output": ("fc3", "fc2", 2e5)}
MLP_GROWN = "; its hidden activations reach ~450 and its last layer's logits 2e5 (an unnormalised score head)"


def _precision_pairs() -> tuple[PairSpec, ...]:
    clean = [_precision(n, p) for n in ("masked_transformer", "detector", "mlp", "decoder", "mtcnn_onet",
                                        "crepe_tiny") for p in ("fp16", "bf16")]
    clean += [_precision("masked_transformer", "fp16", autocast=True),
              _precision("masked_transformer", "bf16", variant="attention_logits_bf16", setup=LOGITS,
                         grown=LOGITS_GROWN),
              _precision("detector", "bf16", variant="box_head_bf16", setup=BOX, grown=BOX_GROWN),
              _precision("mlp", "bf16", variant="logits_bf16", setup=LOGITS_MLP, grown=MLP_GROWN)]
    overflow = [
        _overflow("masked_transformer", "attention_logits_half", LOGITS, "attention", "Torch.matmul",
                  LOGITS_GROWN + "; FP16 softmax of inf gives NaN from there to the output"),
        _overflow("masked_transformer", "attention_logits_autocast", LOGITS, "attention", "Torch.matmul",
                  LOGITS_GROWN + " (autocast runs the matmul in FP16)", autocast=True),
        _overflow("detector", "box_head_half", BOX, "box_head", "Functional.conv2d",
                  BOX_GROWN + "; the box output is inf, the class output is fine"),
        _overflow("mlp", "logits_half", LOGITS_MLP, "fc3", "Functional.linear", MLP_GROWN + "; the output is inf"),
    ]
    return (*clean, *overflow)


def _reference_nonfinite() -> tuple[PairSpec, ...]:
    """A float16 reference: the MLP whose logits pass 65504, cast whole to FP16 (the target of the
    ``logits_half`` overflow pair), as the reference. Against a target that also computes fc3 in FP16 (CPU
    autocast) both outputs are inf; against the float32 run (that pair's roles reversed) only the
    reference's is."""
    half = _overflow("mlp", "logits_half", LOGITS_MLP, "fc3", "Functional.linear", MLP_GROWN)
    fp16_ref = half.target
    autocast = _run("mlp", "inference", "logits_autocast_fp16", setup=LOGITS_MLP, autocast="fp16")
    what = f"{WHAT['mlp']}{MLP_GROWN}: the reference is the whole model cast to FP16 (model.half()), whose fc3 " \
           "output passes 65504 (inf)"
    return (
        PairSpec("msprobe_reference_nonfinite", "reference_nonfinite", "mlp", "fp16_reference_autocast_target",
                 fp16_ref, autocast, where="fc3", api="Functional.linear", precision="fp16",
                 description=f"{what}; the target runs under CPU autocast to FP16, so its fc3 output is inf too"),
        PairSpec("msprobe_reference_nonfinite", "reference_nonfinite", "mlp", "fp16_reference_fp32_target",
                 fp16_ref, half.reference, where="fc3", api="Functional.linear", precision="fp16",
                 description=f"{what}; the target runs in float32 and keeps the logits finite"),
    )


def _fault(family: str, kind: str, network: str, variant: str, reference: RunSpec, where: str | None,
           api: str | None, what: str, phase: str = "forward", tasks: tuple[str, ...] = TASKS, **knobs) -> PairSpec:
    target = _run(network, reference.mode, variant, **knobs)
    return PairSpec(family, kind, network, variant, reference, target, where=where, api=api, phase=phase,
                    tasks=tasks,
                    description=f"{WHAT[network]}{TRAIN if reference.mode == 'train_step' else ''}; {what}")


def _fault_pairs() -> tuple[PairSpec, ...]:
    ref = {n: _run(n, "inference", "reference") for n in ("masked_transformer", "detector", "decoder")}
    train = {n: _run(n, "train_step", "reference") for n in ("masked_transformer", "detector", "mlp", "decoder")}
    arg, inp = "msprobe_argument_mismatch", "msprobe_input_mismatch"
    grad = "msprobe_gradient_fault"
    return (
        _fault(inp, "input_mismatch", "masked_transformer", "ids_off_by_one", ref["masked_transformer"], None, None,
               "the target's tokenizer keeps the raw bytes as ids (no id reserved for padding): every id one lower",
               input_fault="ids_off_by_one"),
        _fault(inp, "input_mismatch", "masked_transformer", "end_of_text_padding", ref["masked_transformer"], None,
               None, "the target's tokenizer pads with its end-of-text id instead of 0 (the padding is attended)",
               input_fault="end_of_text_padding"),
        # The same ids in other places: max/min/mean/norm cannot see it, so no statistics task.
        _fault(inp, "input_mismatch", "masked_transformer", "left_padding", ref["masked_transformer"], None, None,
               "the target's tokenizer pads on the left", input_fault="left_padding", tasks=("tensor", "md5")),
        _fault(arg, "argument_mismatch", "masked_transformer", "cosine_head_eps0", ref["masked_transformer"], "head",
               "Functional.normalize", "the target's cosine head normalises with eps=0: the padding row of the "
               "embedding table is zero, 0/0 gives NaN logits from that call on",
               argument=("head", "eps", 0.0)),
        _fault("msprobe_problem_node", "problem_node", "masked_transformer", "sqrt_kernel_nan",
               ref["masked_transformer"], "embed_norm", "Tensor.sqrt",
               "the target device's sqrt kernel computes x * rsqrt(x): the square root of the padding rows' "
               "zero mean square is NaN (0 * inf), and NaN spreads to the output", setup={"kernel": "sqrt_x_rsqrt"}),
        _fault(arg, "argument_mismatch", "detector", "bn_training_left_on", ref["detector"], "backbone.1",
               "Functional.batch_norm", "the target forgets model.eval(): BatchNorm normalises with the batch's "
               "statistics (training=True)", setup={"forget_eval": True}),
        _fault("msprobe_parameter_mismatch", "parameter_mismatch", "detector", "cls_head_weights", ref["detector"],
               "cls_head", "Functional.conv2d", "the target's class head was not loaded from the checkpoint "
               "(re-initialised)", perturbed_parameter="cls_head.weight"),
        _fault(arg, "argument_mismatch", "decoder", "upsample_nearest", ref["decoder"], "up", "Functional.interpolate",
               "the target upsamples with mode='nearest' instead of 'bilinear'", argument=("up", "mode", "nearest")),
        _fault(arg, "argument_mismatch", "decoder", "bn_training_left_on", ref["decoder"], "bn1",
               "Functional.batch_norm", "the target forgets model.eval() (BatchNorm training=True)",
               setup={"forget_eval": True}),
        _fault(arg, "argument_mismatch", "masked_transformer", "dropout_p", train["masked_transformer"],
               "net.dropout", "Functional.dropout", "the target's MLP dropout is p=0.3 instead of 0.1",
               argument=("net.dropout", "p", 0.3)),
        _fault(arg, "argument_mismatch", "mlp", "loss_reduction_sum", train["mlp"], "criterion",
               "Functional.cross_entropy", "the target's loss sums over the batch (reduction='sum') instead of "
               "averaging", argument=("criterion", "reduction", "sum")),
        _fault(arg, "argument_mismatch", "mlp", "dropout_p", train["mlp"], "net.dropout", "Functional.dropout",
               "the target's dropout is p=0.5 instead of 0.1", argument=("net.dropout", "p", 0.5)),
        _fault(arg, "argument_mismatch", "decoder", "loss_reduction_sum", train["decoder"], "criterion",
               "Functional.mse_loss", "the target's MSE loss sums (reduction='sum') instead of averaging",
               argument=("criterion", "reduction", "sum")),
        _fault(grad, "problem_node", "mlp", "grad_hook_fc2", train["mlp"], "net.fc2", "Functional.linear",
               "a hook left on fc2's output halves the gradient flowing into fc2 (the forward is identical)",
               phase="backward", setup={"grad_scale": ("net.fc2", 0.5)}),
        _fault(grad, "problem_node", "masked_transformer", "grad_hook_fc1", train["masked_transformer"], "net.fc1",
               "Functional.linear", "a hook left on the MLP's fc1 output scales its gradient by 0.25 (the forward "
               "is identical)", phase="backward", setup={"grad_scale": ("net.fc1", 0.25)}),
        _fault(grad, "problem_node", "decoder", "grad_hook_deconv", train["decoder"], "net.deconv",
               "Functional.conv_transpose2d", "a hook left on the ConvTranspose2d's output doubles its gradient",
               phase="backward", setup={"grad_scale": ("net.deconv", 2.0)}),
        _fault(grad, "problem_node", "detector", "grad_hook_box_head", train["detector"], "net.box_head",
               "Functional.conv2d", "a hook left on the box head's output halves its gradient (the class head "
               "and the forward are untouched)", phase="backward", setup={"grad_scale": ("net.box_head", 0.5)}),
        PairSpec("msprobe_same_run", "consistent", "mlp", "rerun", train["mlp"], _run("mlp", "train_step", "rerun"),
                 description=f"{WHAT['mlp']}{TRAIN}, run twice with the same seed"),
    )


FAMILIES: tuple[PairSpec, ...] = (*_precision_pairs(), *_fault_pairs())
#: Pairs made for the rules' input cases (rules/core/network/cases), not part of the scored corpus: the
#: reference, not the target, is what breaks, and no root-cause kind of the diagnosis benchmark says so.
RULE_CASE_PAIRS: tuple[PairSpec, ...] = _reference_nonfinite()
