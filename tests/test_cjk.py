"""Chinese text rendered from folded YAML loses the spaces line breaks left between CJK characters."""

from advisor.cjk import tidy


def test_spaces_between_cjk_characters_go_in_chinese_only():
    assert tidy("重算该层： 按配置量化，改用最小/最大值 校准", "zh") == "重算该层：按配置量化，改用最小/最大值校准"
    assert tidy("输出余弦相似度为 0.98，输入 MatMul_26 偏离", "zh") == "输出余弦相似度为 0.98，输入 MatMul_26 偏离"
    assert tidy("a b", "zh") == "a b" and tidy("重算 该层", "en") == "重算 该层"
