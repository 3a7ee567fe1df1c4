"""Realistic msaccucmp result files (FORMATS.md §1), as text the tests write to disk."""

from __future__ import annotations

# The usual current layout: one Address (NPU side dumped from device memory, golden side .npy),
# overflow detection on, all ten metrics, a fail reason column.
FULL_HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)
FULL_ROWS = [
    # line 2: the network input, identical on both sides
    '0,Data,input_1,DT_FLOAT,0x1240c0000000,input_1,DT_FLOAT,input_1:output:0,"[1,3,224,224]",NaN,'
    '1.000000,0.000000,0.000000,0.000000,0.000000,"(0.449512;0.226433),(0.449512;0.226433)",'
    '0.000000,0.000000,0.000000,0.000000,',
    # line 3: an op that exists only on the NPU (GroundTruth *): nothing to compare
    '1,TransData,trans_TransData_1,DT_FLOAT16,0x1240c0100000,*,NaN,trans_TransData_1:output:0,'
    '"[1,1,224,224,16]",NO,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,"GroundTruth is *, no golden data"',
    # lines 4-5: a fused conv (two golden ops), FP16 output overflowing, KL infinite
    '2,Conv2D,conv1/Conv2D_fused,DT_FLOAT16,0x1240c0200000,"conv1/Conv2D,conv1/BiasAdd",DT_FLOAT,'
    'conv1/Conv2D_fused:input:0,"[1,3,224,224]",NO,0.999998,0.001953,0.012345,0.001234,0.000001,'
    '"(0.449463;0.226318),(0.449512;0.226433)",0.000134,0.000187,0.004321,0.000298,',
    '2,Conv2D,conv1/Conv2D_fused,DT_FLOAT16,0x1240c0300000,"conv1/Conv2D,conv1/BiasAdd",DT_FLOAT,'
    'conv1/Conv2D_fused:output:0,"[1,64,224,224]",YES,0.873215,65504.000000,3.141593,0.512345,inf,'
    '"(12.500000;65504.000000),(0.120000;1.300000)",4.500000,7.200000,1.000000,0.500000,',
    # line 6: an op that exists only on the golden side (NPUDump *)
    '3,*,*,NaN,NaN,conv2/Relu,DT_FLOAT,conv2/Relu:output:0,"[1,64,112,112]",NaN,'
    'NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN,"NPUDump is *, no NPU data"',
    # line 7: the final network output appended by msaccucmp
    '4,NaN,Node_Output,DT_FLOAT,NaN,output_0.npy,DT_FLOAT,Node_Output:output:0,[],NaN,'
    '0.871234,2.500000,10.200000,0.480000,0.031000,"(0.100000;0.900000),(0.110000;0.950000)",'
    '0.210000,0.330000,0.800000,0.120000,',
]

LEGACY_HEADER = ("Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,MaxAbsoluteError,"
                 "AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
                 "StandardDeviation")
LEGACY_ROWS = [
    '0,data,data,data:output:0,1.000000,0.000000,0.000000,0.000000,0.000000,'
    '"(0.500000;0.200000),(0.500000;0.200000)"',
    '1,conv1conv1_relu,"conv1,conv1_relu",conv1conv1_relu:output:0,0.999876,0.003906,0.010000,'
    '0.002000,0.000010,"(0.310000;0.410000),(0.310100;0.409900)"',
    '2,pool1,*,pool1:output:0,NaN,NaN,NaN,NaN,NaN,NaN',
]

# A minimal current-layout header: the required columns and one metric.
MINIMAL_HEADER = "Index,OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity"


def csv_text(header: str, rows: list[str], newline: str = "\n") -> str:
    return newline.join([header, *rows]) + newline
