"""int8 weights in an ONNX file: each large float weight stored as int8 with a
scale per output column, turned back into float32 by a `DequantizeLinear` at
the top of the graph.

onnxruntime's own `quantize_dynamic` quantizes only the weights a `MatMul` of
the same graph reads directly; the exported decode loops read theirs inside a
`Loop` body or through a `Slice`, so it left most of them float. Storing the
weights as int8 works for any graph: the file is about a quarter of the size,
and the runtime computes in float32 on the weights it restores once per run
(as TFLite's dynamic-range files are converted for their float kernels).
"""

import numpy as np

# Weights of fewer elements stay float32 (biases, small tables: no size to save).
MIN_ELEMENTS = 1024


def quantize_weights(proto, min_elements=MIN_ELEMENTS):
    """Stores the large float32 weights of an ONNX model as int8.

    Each 2-D weight is scaled per column (its last axis: the outputs of a
    `MatMul`, or an embedding's features) to the int8 range, symmetrically;
    a `DequantizeLinear` node, first in the graph, gives back the float32
    tensor under the weight's own name, so every node that read it (in a
    subgraph too) reads the restored one.

    Args:
        proto: an `onnx.ModelProto` (changed in place).
        min_elements: int, weights with fewer elements stay float32.

    Returns:
        The `onnx.ModelProto`.

    Example:

    >>> import onnx
    >>> from onnx import helper, numpy_helper
    >>> weight = numpy_helper.from_array(
    ...     np.linspace(-1, 1, 64 * 32, dtype="float32").reshape(64, 32), "w")
    >>> graph = helper.make_graph(
    ...     [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64])],
    ...     [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 32])],
    ...     [weight])
    >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    >>> quantized = quantize_weights(model)
    >>> [t.data_type == onnx.TensorProto.INT8 for t in quantized.graph.initializer][0]
    True
    >>> quantized.graph.node[0].op_type
    'DequantizeLinear'
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = proto.graph
    kept, nodes = [], []
    for tensor in graph.initializer:
        if tensor.data_type != TensorProto.FLOAT or len(tensor.dims) != 2:
            kept.append(tensor)
            continue
        weight = numpy_helper.to_array(tensor)
        if weight.size < min_elements:
            kept.append(tensor)
            continue
        scale = np.abs(weight).max(axis=0) / 127.0  # (columns,)
        scale = np.where(scale > 0, scale, 1.0).astype("float32")
        quantized = np.clip(np.round(weight / scale), -127, 127).astype("int8")
        name = tensor.name
        kept += [
            numpy_helper.from_array(quantized, f"{name}_int8"),
            numpy_helper.from_array(scale, f"{name}_scale"),
        ]
        nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}_int8", f"{name}_scale"],
                [name],
                axis=1,
                name=f"{name}_dequantize",
            )
        )
    del graph.initializer[:]
    graph.initializer.extend(kept)
    for node in reversed(nodes):
        graph.node.insert(0, node)
    return proto
