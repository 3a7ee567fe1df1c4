"""Chinese text out of folded YAML: the space a line break leaves between two CJK characters.

Rule evidence and advice pages are YAML folded scalars (``>-``), which join lines with a space.
English needs it; Chinese does not, and "重算该层： 按配置" reads as a typo. Rendered Chinese text
goes through ``tidy`` once, wherever it is rendered (rule evidence, advice pages).
"""

from __future__ import annotations

import re

# CJK ideographs and punctuation, full-width forms.
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
_GAP = re.compile(rf"(?<=[{_CJK}])[ \t]+(?=[{_CJK}])")


def tidy(text: str, lang: str) -> str:
    """``text`` without spaces between two CJK characters when ``lang`` is zh; unchanged otherwise."""
    return _GAP.sub("", text) if lang == "zh" else text
