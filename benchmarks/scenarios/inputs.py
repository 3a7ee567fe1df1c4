"""Real inputs, read from files that PyPI wheels ship (nothing is downloaded at run time).

- Photo: scikit-image's ``astronaut.png`` (Eileen Collins, NASA, public domain), which the
  scikit-image wheel carries in ``skimage/data``; read with Pillow.
- Speech: CMU ARCTIC ``arctic_a0007.wav`` (16 kHz, free licence), shipped in the ``pysptk``
  distribution as ``pysptk/example_audio_data``; read with scipy (pysptk itself is not imported).
- Text: the UTF-8 bytes of a real English sentence.

Each function returns exactly what the golden network is fed, and takes the knobs a faulty
pre-processing pipeline would get wrong (crop box, flip, frame offset...).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.scenarios.networks import package_file

#: The face in astronaut.png as (top, left, size) in pixels of the 512x512 image.
FACE_BOX: tuple[int, int, int] = (40, 168, 124)
#: The opening of "A Tale of Two Cities" (Dickens, 1859; public domain).
SENTENCE = "It was the best of times, it was the worst of times."
#: The rest of its first sentence, for runs over longer sequences.
OPENING = (SENTENCE[:-1] + ", it was the age of wisdom, it was the age of foolishness, it was the epoch of "
           "belief, it was the epoch of incredulity, it was the season of Light, it was the season of Darkness, "
           "it was the spring of hope, it was the winter of despair.")
#: CREPE's input: frames of 1024 samples at 16 kHz.
CREPE_FRAME = 1024


@lru_cache(maxsize=1)
def astronaut() -> np.ndarray:
    """The 512x512 RGB uint8 photo."""
    from PIL import Image

    with Image.open(package_file("skimage", "data", "astronaut.png")) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def mtcnn_normalise(pixels: torch.Tensor) -> torch.Tensor:
    """MTCNN's pre-processing: (x - 127.5) / 128."""
    return (pixels - 127.5) * 0.0078125


def image_to_nchw(image: np.ndarray) -> torch.Tensor:
    """HWC uint8 -> 1x3xHxW float32 (raw 0..255 values)."""
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)[None].float()


def resize(pixels: torch.Tensor, size: int) -> torch.Tensor:
    """Area resize of an NCHW float tensor to size x size."""
    return F.interpolate(pixels, size=(size, size), mode="area")


def face_crop(size: int, shift: tuple[int, int] = (0, 0), flip: bool = False,
              scale: float = 1.0) -> torch.Tensor:
    """The face of the astronaut photo resized to ``size``, as raw 0..255 NCHW float32.

    ``shift`` (rows, cols) moves the box and ``scale`` grows it around its centre; ``flip`` mirrors
    the crop: what a preprocessing pipeline that disagrees with the reference one produces.
    """
    top, left, side = FACE_BOX
    grown = int(round(side * scale))
    top += shift[0] - (grown - side) // 2
    left += shift[1] - (grown - side) // 2
    crop = astronaut()[top:top + grown, left:left + grown]
    if flip:
        crop = crop[:, ::-1]
    return resize(image_to_nchw(crop), size)


def whole_photo(size: int, offset: tuple[int, int] = (0, 0)) -> torch.Tensor:
    """The photo (optionally cropped by ``offset`` pixels) resized to ``size``, raw NCHW float32."""
    image = astronaut()[offset[0]:, offset[1]:]
    side = min(image.shape[:2])
    return resize(image_to_nchw(image[:side, :side]), size)


@lru_cache(maxsize=1)
def speech() -> np.ndarray:
    """The recording as float32 in [-1, 1] at 16 kHz."""
    from scipy.io import wavfile

    rate, samples = wavfile.read(package_file("pysptk", "example_audio_data", "arctic_a0007.wav"))
    if rate != 16000:
        raise ValueError(f"arctic_a0007.wav: expected 16 kHz, found {rate} Hz")
    return samples.astype(np.float32) / 32768.0


def crepe_frames(frames: int, start: int = 32000, hop: int = 160, normalise: str = "frame") -> torch.Tensor:
    """``frames`` CREPE input frames from sample ``start``, every ``hop`` samples (10 ms).

    ``normalise="frame"`` does what torchcrepe does: each frame to zero mean and unit standard
    deviation. The other values reproduce pre-processing bugs: ``"none_int16"`` feeds the 16-bit
    PCM sample values as floats (no scaling to [-1, 1], no per-frame normalisation) and
    ``"centre_int16"`` removes each frame's mean but never divides by its standard deviation.
    Shape (frames, 1, 1024, 1).
    """
    audio = speech()
    windows = np.stack([audio[start + i * hop:start + i * hop + CREPE_FRAME] for i in range(frames)])
    if normalise == "frame":
        windows = windows - windows.mean(axis=1, keepdims=True)
        windows = windows / np.maximum(windows.std(axis=1, keepdims=True), 1e-10)
    elif normalise == "none_int16":
        windows = windows * 32768.0
    elif normalise == "centre_int16":
        windows = (windows - windows.mean(axis=1, keepdims=True)) * 32768.0
    else:
        raise ValueError(f"unknown normalisation '{normalise}'")
    return torch.from_numpy(windows.astype(np.float32))[:, None, :, None]


def sentence_tokens(text: str = SENTENCE) -> torch.Tensor:
    """UTF-8 bytes of ``text`` as int64 tokens, shape (1, len)."""
    return torch.tensor([list(text.encode("utf-8"))], dtype=torch.int64)


def opening_tokens(length: int) -> torch.Tensor:
    """The first ``length`` bytes of the novel's opening sentence as tokens, shape (1, length)."""
    data = OPENING.encode("utf-8")
    if not 0 < length <= len(data):
        raise ValueError(f"length must be in 1..{len(data)}")
    return torch.tensor([list(data[:length])], dtype=torch.int64)
