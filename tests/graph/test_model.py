"""The Graph model on small hand-made graphs: edges, order, neighbourhood, golden -> target mapping."""

from __future__ import annotations

import pytest

from advisor.graph import Edge, Graph, Node


def node(name: str, *sources: str, control: tuple[str, ...] = (), fused: tuple[str, ...] = (), **kw) -> Node:
    return Node(name=name, op_type=kw.pop("op_type", "Op"), inputs=tuple(Edge(s, 0, f"{s}:0") for s in sources),
                control_inputs=control, fused_from=fused, **kw)


def chain() -> Graph:
    #  data -> conv -> bn -> relu -> out ; conv -> side ; ctrl: side -(control)-> out
    return Graph([
        node("data", op_type="Data"),
        node("conv", "data", fused=("Conv_1", "Const_2")),
        node("bn", "conv", fused=("BatchNormalization_3", "Const_2")),
        node("relu", "bn"),
        node("side", "conv"),
        node("out", "relu", control=("side",), op_type="NetOutput"),
    ], name="chain")


def test_predecessors_and_successors_follow_data_edges_only():
    graph = chain()
    assert graph.predecessors("bn") == ["conv"]
    assert graph.successors("conv") == ["bn", "side"]
    assert graph.predecessors("out") == ["relu"]          # the control edge from side is not data
    assert graph.control_predecessors("out") == ["side"]
    assert graph.successors("side") == []


def test_a_node_feeding_another_twice_is_one_predecessor():
    graph = Graph([node("a"), node("b", "a", "a")])
    assert graph.predecessors("b") == ["a"] and graph.successors("a") == ["b"]
    assert len(graph.node("b").inputs) == 2


def test_lookup_by_name():
    graph = chain()
    assert "bn" in graph and "nope" not in graph and len(graph) == 6
    assert graph.node("bn").fused_from == ("BatchNormalization_3", "Const_2")
    with pytest.raises(KeyError, match="no op named 'nope'"):
        graph.node("nope")
    with pytest.raises(KeyError):
        graph.predecessors("nope")


def test_topological_order_keeps_file_order_when_it_already_is_one():
    graph = chain()
    assert graph.topological_order() == ["data", "conv", "bn", "relu", "side", "out"]


def test_topological_order_puts_producers_first_and_honours_control_edges():
    graph = Graph([node("out", "b", control=("c",)), node("b", "a"), node("c"), node("a")])
    order = graph.topological_order()
    assert order.index("a") < order.index("b") < order.index("out")
    assert order.index("c") < order.index("out")
    assert sorted(order) == ["a", "b", "c", "out"]


def test_topological_order_survives_a_cycle():
    # TF while loops: Merge <- NextIteration <- ... <- Merge
    graph = Graph([node("enter"), node("merge", "enter", "next"), node("body", "merge"), node("next", "body"),
                   node("exit", "merge")])
    order = graph.topological_order()
    assert order[0] == "enter"
    assert sorted(order) == sorted(n.name for n in graph)


def test_neighbourhood_takes_ancestors_and_descendants_not_siblings():
    graph = chain()
    around = graph.neighbourhood("bn", depth=1)
    assert [n.name for n in around] == ["conv", "bn", "relu"]
    assert around.predecessors("conv") == []              # data is outside
    assert around.node("conv").inputs == graph.node("conv").inputs
    wider = graph.neighbourhood("bn", depth=2)
    assert [n.name for n in wider] == ["data", "conv", "bn", "relu", "out"]   # side is a sibling
    assert [n.name for n in graph.neighbourhood("data", depth=0)] == ["data"]


def test_golden_to_target_maps_one_golden_op_to_every_target_fused_from_it():
    graph = chain()
    assert graph.golden_to_target["Const_2"] == ("conv", "bn")
    assert graph.targets_of("BatchNormalization_3") == ("bn",)
    assert graph.targets_of("unknown") == ()


def test_duplicate_names_warn_and_resolve_to_the_first():
    graph = Graph([node("a", op_type="First"), node("a", op_type="Second"), node("b", "a")])
    assert graph.node("a").op_type == "First"
    assert any("more than once" in w for w in graph.warnings)


def test_inputs_from_missing_ops_warn_but_graph_inputs_do_not():
    weights = Graph([Node(name="conv", op_type="Conv", inputs=(Edge("x", 0, "x"), Edge("w", 0, "w")))],
                    inputs=["x"])
    assert weights.warnings == []
    dangling = Graph([node("b", "ghost")])
    assert any("'ghost'" in w for w in dangling.warnings)


def test_links_join_subgraphs_to_their_callers():
    graph = Graph([node("src"), node("call", "src", op_type="PartitionedCall"),
                   node("sub_data", op_type="Data", parent="call"), node("inner", "sub_data", parent="call"),
                   node("sub_out", "inner", op_type="NetOutput", parent="call"), node("after", "call")],
                  links=[("src", "sub_data"), ("sub_out", "call")])
    assert graph.predecessors("sub_data") == ["src"]
    assert graph.predecessors("call") == ["src", "sub_out"]
    order = graph.topological_order()
    assert order.index("src") < order.index("sub_data") < order.index("inner") < order.index("call")


def test_pass_counts_and_frame():
    graph = Graph([node("a", passes=("P1", "P2"), fused=("x", "y")), node("b", "a", passes=("P1",))])
    assert graph.pass_counts() == {"P1": 2, "P2": 1}
    frame = graph.to_frame()
    assert list(frame["op_name"]) == ["a", "b"]
    assert frame.loc[0, "golden_ops"] == "x,y" and frame.loc[0, "passes"] == "P1,P2"
    assert bool(frame.loc[0, "is_fused"]) and not bool(frame.loc[1, "is_fused"])
    assert list(frame["in_degree"]) == [0, 1] and list(frame["out_degree"]) == [1, 0]


def test_inserted_ops_say_they_have_no_original():
    inserted = Node(name="trans_Cast_0", op_type="Cast", attributes={"_datadump_original_op_names": []})
    unknown = Node(name="x", op_type="Cast")
    assert inserted.is_inserted and not unknown.is_inserted


def test_a_large_graph_builds_and_orders_in_linear_time():
    # not a timing test: a quadratic algorithm on 50k nodes would take minutes, linear ones a second
    n = 50_000
    graph = Graph([node(f"n{i}", *([f"n{i - 1}"] if i else []), fused=(f"g{i}", f"g{i // 2}")) for i in range(n)])
    assert graph.topological_order()[-1] == f"n{n - 1}"
    assert graph.targets_of("g10") == ("n10", "n20", "n21")
    assert len(graph.neighbourhood(f"n{n // 2}", depth=3)) == 7
