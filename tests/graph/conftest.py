"""Where the shared real-world files live (never copied into the repository): tests that need them
skip, saying why, when the directory is absent."""

from __future__ import annotations

from pathlib import Path

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
OAM = "hicann__oam-tools"
ASYS = "test__st__msaicerr__res__ori_data__asys_output_20230713074104794__dfx__graph__370_0__"
GE_PROTO_1 = f"{OAM}/{ASYS}ge_proto_00000000_Build.txt"
GE_PROTO_11 = f"{OAM}/{ASYS}ge_proto_00000001_Build.txt"
GE_ONNX_1 = f"{OAM}/{ASYS}ge_onnx_00000000_graph_1_Build.pbtxt"
GE_ONNX_11 = f"{OAM}/{ASYS}ge_onnx_00000001_graph_11_Build.pbtxt"
GE_PROTO_OLD = f"{OAM}/test__st__msaicerr__res__ori_data__complie_path_train__aic_error__ge_proto_00056_Build.txt"
OM_TDNN = "Ascend__msit/msit__test__UT__resource__analyze__dataset__model__test.om.json"
OM_NMS = "Ascend__msit/msit__test__UT__resource__msquickcmp__om__model.json"
ONNX_JSON = "Ascend__msit/msit__test__UT__resource__analyze__dataset__model__test.onnx.json"
ATB_MODEL = "Ascend__msit/msit__test__UT__resource__llm__compare__Bloom7BFlashAttentionModel.json"
MODEL_TREE = "Ascend__msit/msit__test__UT__resource__llm__compare__model_tree.json"
FUSION_ASYS = f"{OAM}/test__st__asys__data__ops__kernel__fusion_result.json"
FUSION_CTPN = "bmzhong__ATC-CTPN/fusion_result.json"
FUSION_YOLO_ATC = "qin-yuhao__ascend310_yolov8_pyb/fusion_result.json"
FUSION_YOLO_TORCH = "Salary-only-17k__uyolov8-ascend-error/fusion_result.json"
FUSION_INT8 = "sunjiating__ascend_quantization/fusion_result.json"
