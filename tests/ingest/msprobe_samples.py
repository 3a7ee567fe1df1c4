"""msprobe compare result CSVs (FORMATS.md §2) as text the tests write to disk: the current
header in its three modes and the old ptdbg one, with the values msprobe really writes."""

from __future__ import annotations

BASIC = ("NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,"
         "NPU Requires_grad,Bench Requires_grad")
STATS = "NPU max,NPU min,NPU mean,NPU l2norm,Bench max,Bench min,Bench mean,Bench l2norm"

# All mode ("real data" compare), with the stack column.
CURRENT_HEADER = (f"{BASIC},Cosine,EucDist,MaxAbsErr,MaxRelativeErr,One Thousandth Err Ratio,"
                  f"Five Thousandths Err Ratio,{STATS},Requires_grad Consistent,Accuracy Reached or Not,"
                  "Err_message,NPU_Stack_Info")
CURRENT_ROWS = [
    # line 2-3: positional input; its stack spans two lines inside quotes
    'Functional.linear.0.forward.input.0,Functional.linear.0.forward.input.0,torch.float16,torch.float32,'
    '"[2, 4]","[2, 4]",True,True,0.999999,0.001,0.0005,0.001,1.0,1.0,1.5,-1.5,0.1,3.0,1.5,-1.5,0.1,3.0,True,Yes,,'
    '"[\'File ""train.py"", line 3, in step\',\n \'y = linear(x, w)\']"',
    # line 4: a keyword argument; cosine 0.95 and MaxAbsErr 1.2: msprobe says No
    'Functional.linear.0.forward.input.weight,Functional.linear.0.forward.input.weight,torch.float16,'
    'torch.float32,"[4, 4]","[4, 4]",True,True,0.95,2.5,1.2,0.8,0.5,0.7,2.0,-2.0,0.0,5.0,2.0,-2.0,0.0,5.0,'
    'True,No,,None',
    # line 5-6: shapes differ: every metric cell says so, the message ends with a newline
    'Functional.linear.0.forward.output.0,Functional.linear.0.forward.output.0,torch.float16,torch.float32,'
    '"[2, 4]","[2, 3]",True,True,shape unmatched,shape unmatched,shape unmatched,shape unmatched,'
    'shape unmatched,shape unmatched,1.0,0.0,0.5,2.0,1.0,0.0,0.5,2.0,True,Unmatched,'
    '"Shape of NPU and bench tensor do not match. Skipped.\n",None',
    # line 7: no bench data
    'Torch.relu.0.forward.input.0,N/A,torch.bfloat16,N/A,[3],N/A,False,N/A,N/A,N/A,N/A,N/A,N/A,N/A,'
    '1.0,0.0,0.5,1.0,N/A,N/A,N/A,N/A,False,N/A,No bench data matched.,None',
    # line 8: blank
    '',
    # line 9: backward; the bench tensor is all zero: Nan cosine, inf EucDist, "nan<TAB>", unsupported
    'Functional.linear.0.backward.input.0,Functional.linear.0.backward.input.0,torch.float16,torch.float32,'
    '[2],[2],False,False,Nan,inf,nan\t,unsupported,None,,1.0,0.0,0.5,1.0,0,0,0,0,True,None,'
    '"Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data.",None',
]

SUMMARY_HEADER = (f"{BASIC},Max diff,Min diff,Mean diff,L2norm diff,MaxRelativeErr,MinRelativeErr,"
                  f"MeanRelativeErr,NormRelativeErr,{STATS},Requires_grad Consistent,Result,Err_message")
SUMMARY_ROWS = [
    'Functional.conv2d.0.forward.input.0,Functional.conv2d.0.forward.input.0,torch.float16,torch.float32,'
    '"[1, 3]","[1, 3]",True,True,0.5,0.0,0.01,1.0,50.0%,N/A,1.0%,10.0%,1.5,0.0,1.01,11.0,1.0,0.0,1.0,10.0,'
    'True,Warning,Need double check api accuracy. ',
    'Functional.conv2d.0.forward.output.0,Functional.conv2d.0.forward.output.0,torch.float16,torch.float32,'
    '"[1, 3]","[1, 3]",True,True,nan\t,nan\t,inf\t,0,Nan,Nan,Nan,0.0%,nan,0.0,inf,1.0,1.0,0.0,1.0,1.0,True,,',
]

MD5_HEADER = f"{BASIC},NPU MD5,BENCH MD5,Requires_grad Consistent,Result,Err_message"
MD5_ROWS = [
    'Functional.conv2d.0.forward.input.0,Functional.conv2d.0.forward.input.0,torch.float16,torch.float16,'
    '"[1, 3]","[1, 3]",True,True,3a5f0c21,3a5f0c21,True,pass,',
    'Functional.conv2d.0.forward.output.0,Functional.conv2d.0.forward.output.0,torch.float16,torch.float16,'
    '"[1, 3]","[1, 3]",True,True,9b1e44d0,7c2d0a9f,True,Different,',
    'Torch.add.0.forward.output.0,N/A,torch.float16,N/A,"[1, 3]",N/A,True,N/A,5e6f7a8b,N/A,False,N/A,'
    'No bench data matched.',
]

# The old ptdbg header (as the real files in realdata), MindSpore dtypes this time.
LEGACY_HEADER = ("NPU Name,Bench Name,NPU Tensor Dtype,Bench Tensor Dtype,NPU Tensor Shape,Bench Tensor Shape,"
                 "Cosine,MaxAbsErr,NPU max,NPU min,NPU mean,Bench max,Bench min,Bench mean,"
                 "Accuracy Reached or Not,Err_message")
LEGACY_ROWS = [
    'Functional_matmul_0_forward_input.0,Functional_matmul_0_forward_input.0,Float16,Float32,"[2, 2]","[2, 2]",'
    '0.999,0.002,1.0,0.0,0.5,1.0,0.0,0.5,Yes,',
    'Functional_matmul_0_forward_output,Functional_matmul_0_forward_output,BFloat16,Float32,"[2, 2]","[2, 2]",'
    '0.8,2.5,9.0,0.0,3.0,4.0,0.0,2.0,No,',
]
