"""The safe expression language: refusals, semantics, vectorized == scalar."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.errors import ExpressionError
from workbench.core.expr import MAX_DEPTH, parse_constraint, parse_expr

HOSTILE = [
    # (text, piece that must be named, words the message must contain)
    ("__import__('os').system('x')", "__import__", "reserved"),
    ("().__class__", "().__class__", "attribute access"),
    ("9**9**9**9", "9**9**9", "exponent"),
    ("lambda: 1", "lambda: 1", "lambda"),
    ("x[0]", "x[0]", "subscript"),
    ("open('f')", "open", "call to open"),
    ('"abc"', '"abc"', "string literal"),
    ("[i for i in x]", "[i for i in x]", "list comprehension"),
    ("a.b", "a.b", "attribute access"),
    ("(x := 3)", "x := 3", ":="),
    ("f'{x}'", "f'{x}'", "f-string"),
    ("_x + 1", "_x", "reserved"),
    ("x.__dict__", "x.__dict__", "attribute access"),
    ("min(*x)", "*x", "starred"),
    ("2 ** 65", "65", "exponent"),
    ("2 ** x", "x", "exponent"),
    ("2 ** -1", "-1", "exponent"),
    ("(2 ** 3) ** 2", "(2 ** 3) ** 2", "tower"),
    ("1 << 3", "1 << 3", "<<"),
    ("x in y", "x in y", "in"),
    ("(1, 2)", "(1, 2)", "tuple"),
    ("print(1)", "print", "call to print"),
    ("min(a=1, b=2)", "a=1", "keyword"),
    ("min", "min", "must be called"),
    ("None", "None", "NoneType"),
    ("1j", "1j", "complex"),
    ("x < 'a'", "'a'", "string literal"),
    ("99999999999999999999", "99999999999999999999", "64-bit"),
]


@pytest.mark.parametrize(("text", "piece", "words"), HOSTILE)
def test_hostile_expressions_are_refused_naming_the_piece(text: str, piece: str, words: str) -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expr(text)
    assert info.value.piece == piece
    assert piece in info.value.message
    assert words in info.value.message
    assert info.value.text == text


@pytest.mark.timeout(5)
def test_huge_expression_is_refused_before_parsing() -> None:
    text = "1 + " * 25_000 + "1"  # 100 kB
    start = time.perf_counter()
    with pytest.raises(ExpressionError, match="limit is 2000"):
        parse_expr(text)
    assert time.perf_counter() - start < 0.1


def test_nesting_depth_limit() -> None:
    parse_expr("-" * (MAX_DEPTH - 1) + "1")
    with pytest.raises(ExpressionError, match="nesting depth"):
        parse_expr("-" * (MAX_DEPTH + 5) + "1")
    with pytest.raises(ExpressionError):  # Python's own parser limit, reported as ours
        parse_expr("(" * 300 + "1" + ")" * 300)


@pytest.mark.parametrize("text", ["", "   ", "1 +", "a if b", "x\0"])
def test_syntax_errors(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse_expr(text)


def test_known_names_names_the_unknown_and_lists_known() -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expr("BLOCK * VECC <= 4096", known_names=["BLOCK", "VEC", "d"])
    assert info.value.piece == "VECC"
    assert "known names: BLOCK, VEC, d" in info.value.message


def test_names_and_text() -> None:
    expr = parse_expr("min(BLOCK, d) * ceil_div(tokens, 4) if elem_bytes == 2 else 0")
    assert expr.names == frozenset({"BLOCK", "d", "tokens", "elem_bytes"})
    assert expr.text == "min(BLOCK, d) * ceil_div(tokens, 4) if elem_bytes == 2 else 0"


@pytest.mark.parametrize("a", range(-7, 8))
@pytest.mark.parametrize("b", [-3, -2, -1, 1, 2, 3, 5])
def test_floor_division_and_modulo_follow_python(a: int, b: int) -> None:
    env = {"a": a, "b": b}
    assert parse_expr("a // b").evaluate(env) == a // b
    assert parse_expr("a % b").evaluate(env) == a % b
    assert parse_expr("ceil_div(a, b)").evaluate(env) == -(-a // b)
    vec = {"a": np.array([a]), "b": np.array([b])}
    assert parse_expr("a // b").evaluate_vectorized(vec)[0] == a // b
    assert parse_expr("a % b").evaluate_vectorized(vec)[0] == a % b
    assert parse_expr("ceil_div(a, b)").evaluate_vectorized(vec)[0] == -(-a // b)


@pytest.mark.parametrize(("text", "expected"), [
    ("1 + 2 * 3 - 4", 3),
    ("7 / 2", 3.5),
    ("-7 // 2", -4),
    ("-7 % 3", 2),
    ("2 ** 10", 1024),
    ("-2 ** 2", -4),
    ("+3", 3),
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("3 > 2 >= 2 == 2 != 1", True),
    ("min(5, 3, 9)", 3),
    ("max(5, 3, 9)", 9),
    ("ceil_div(10, 4)", 3),
    ("ceil_div(8, 4)", 2),
    ("gcd(12, 18)", 6),
    ("gcd(-4, 6)", 2),
    ("is_pow2(64)", True),
    ("is_pow2(96)", False),
    ("is_pow2(0)", False),
    ("is_pow2(-4)", False),
    ("abs(-3)", 3),
    ("log2(1)", 0),
    ("log2(1023)", 9),
    ("log2(1024)", 10),
    ("1 if 2 > 1 else 0", 1),
    ("1 if 2 < 1 else 0", 0),
    ("not 0", True),
    ("3 and 4", True),
    ("0 or 0", False),
    ("True + True", 2),
    ("1.5 * 2", 3.0),
])
def test_allowed_grammar_results(text: str, expected: object) -> None:
    value = parse_expr(text).evaluate({})
    assert value == expected
    assert type(value) is type(expected)
    vector = parse_expr(text).evaluate_vectorized({})
    assert vector == expected


def test_chained_comparison_over_values() -> None:
    expr = parse_expr("1 < x <= 3")
    assert [expr.evaluate({"x": x}) for x in range(5)] == [False, False, True, True, False]
    assert expr.evaluate_vectorized({"x": np.arange(5)}).tolist() == [False, False, True, True, False]


def test_missing_name_and_division_by_zero_are_named() -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expr("a + b").evaluate({"a": 1})
    assert info.value.piece == "b"
    for text in ("a / b", "a // b", "a % b", "ceil_div(a, b)"):
        with pytest.raises(ExpressionError, match="by zero"):
            parse_expr(text).evaluate({"a": 1, "b": 0})
        with pytest.raises(ExpressionError, match="1 point"):
            parse_expr(text).evaluate_vectorized({"a": np.array([1, 1]), "b": np.array([1, 0])})
    with pytest.raises(ExpressionError, match="log2"):
        parse_expr("log2(x)").evaluate({"x": 0})


def test_short_circuit_guards_hold_in_both_evaluators() -> None:
    guarded = ["b != 0 and a // b > 1", "b == 0 or a % b == 0", "a // b if b else -1",
               "-1 if b == 0 else a // b", "0 < b < a // b"]
    a = np.array([6, 6, 7, 0])
    b = np.array([0, 2, 0, 3])
    for text in guarded:
        expr = parse_expr(text)
        vector = expr.evaluate_vectorized({"a": a, "b": b})
        scalar = [expr.evaluate({"a": int(x), "b": int(y)}) for x, y in zip(a, b, strict=True)]
        assert vector.tolist() == scalar, text


def test_integer_overflow_is_an_error_in_both_evaluators() -> None:
    expr = parse_expr("x * x")
    with pytest.raises(ExpressionError, match="64-bit"):
        expr.evaluate({"x": 2**32})
    values, invalid = expr.evaluate_masked({"x": np.array([2**31, 2**32, -(2**31)])})
    assert invalid.tolist() == [False, True, False]
    assert values[0] == 2**62
    assert parse_expr("2 ** 62").evaluate({}) == 2**62
    with pytest.raises(ExpressionError):
        parse_expr("2 ** 64").evaluate({})
    with pytest.raises(ExpressionError):
        parse_expr("2 ** 64").evaluate_vectorized({})


def test_string_parameters_compare_with_equality_only() -> None:
    expr = parse_expr("LAYOUT == 'row' and VEC > 2")
    assert expr.evaluate({"LAYOUT": "row", "VEC": 4}) is True
    assert expr.evaluate({"LAYOUT": "col", "VEC": 4}) is False
    vector = expr.evaluate_vectorized({"LAYOUT": np.array(["row", "col", "row"]),
                                       "VEC": np.array([4, 4, 1])})
    assert vector.tolist() == [True, False, False]
    with pytest.raises(ExpressionError, match="string"):
        parse_expr("LAYOUT * 1000").evaluate({"LAYOUT": "row"})
    with pytest.raises(ExpressionError, match="string"):
        parse_expr("LAYOUT * 1000").evaluate_vectorized({"LAYOUT": np.array(["row"])})
    with pytest.raises(ExpressionError, match="string literal"):
        parse_expr("'row' + 'col' == 'rowcol'")


def test_type_errors_for_integer_functions() -> None:
    for text in ("gcd(x, 2)", "is_pow2(x)", "log2(x)"):
        with pytest.raises(ExpressionError, match="integers"):
            parse_expr(text).evaluate({"x": 2.5})
        with pytest.raises(ExpressionError, match="integers"):
            parse_expr(text).evaluate_vectorized({"x": np.array([2.5])})


def test_constraint_must_be_boolean() -> None:
    with pytest.raises(ExpressionError, match="arithmetic"):
        parse_constraint("BLOCK * 2")
    with pytest.raises(ExpressionError, match="arithmetic"):
        parse_constraint("min(BLOCK, 4)")
    flag = parse_constraint("USE_SMEM")
    assert flag.holds({"USE_SMEM": True}) is True
    with pytest.raises(ExpressionError, match="not a boolean"):
        flag.holds({"USE_SMEM": 3})
    with pytest.raises(ExpressionError, match="not booleans"):
        flag.holds_masked({"USE_SMEM": np.array([1, 2])})
    constraint = parse_constraint("BLOCK * VEC <= 4096")
    assert constraint.names == frozenset({"BLOCK", "VEC"})
    assert constraint.holds({"BLOCK": 512, "VEC": 8}) is True
    assert constraint.holds({"BLOCK": 1024, "VEC": 8}) is False
    assert parse_constraint("is_pow2(BLOCK)").holds({"BLOCK": 64}) is True


def test_exprs_pickle_and_compare_by_text() -> None:
    expr = parse_expr("a * 2 + 1")
    again = pickle.loads(pickle.dumps(expr))
    assert again == expr and hash(again) == hash(expr)
    assert again.evaluate({"a": 3}) == 7
    constraint = parse_constraint("a < 3")
    assert pickle.loads(pickle.dumps(constraint)).holds({"a": 1}) is True


# ----------------------------------------------------------------- vectorized == scalar

_NAMES = ("a", "b", "c")


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_NAMES), st.integers(-20, 20).map(lambda v: f"({v})"),
                     st.sampled_from(["True", "False"]))


def _grow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(children, children)
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "//", "%"]), children)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(_leaf(), st.integers(0, 3)).map(lambda t: f"({t[0]} ** {t[1]})"),
        st.tuples(children, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), children,
                  st.sampled_from(["<", "<=", "=="]), children)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]} {t[3]} {t[4]})"),
        two.map(lambda t: f"({t[0]} and {t[1]})"),
        two.map(lambda t: f"({t[0]} or {t[1]})"),
        children.map(lambda t: f"(not {t})"),
        children.map(lambda t: f"(-{t})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["min", "max", "ceil_div", "gcd"]), children, children)
        .map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(st.sampled_from(["abs", "is_pow2", "log2"]), children)
        .map(lambda t: f"{t[0]}({t[1]})"),
    )


INT_EXPRESSIONS = st.recursive(_leaf(), _grow, max_leaves=12)


def _scalar_outcomes(text: str, points: list[dict[str, int]]) -> list[object]:
    expr = parse_expr(text)
    out: list[object] = []
    for env in points:
        try:
            out.append(expr.evaluate(env))
        except ExpressionError:
            out.append(ExpressionError)
    return out


@settings(max_examples=300, deadline=None)
@given(text=INT_EXPRESSIONS,
       points=st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40),
                                 st.integers(-3, 3)), min_size=1, max_size=20))
def test_vectorized_matches_scalar(text: str, points: list[tuple[int, int, int]]) -> None:
    envs = [dict(zip(_NAMES, p, strict=True)) for p in points]
    scalar = _scalar_outcomes(text, envs)
    arrays = {name: np.array([env[name] for env in envs], dtype=np.int64) for name in _NAMES}
    values, invalid = parse_expr(text).evaluate_masked(arrays)
    values = np.broadcast_to(values, (len(envs),))
    invalid = np.broadcast_to(invalid, (len(envs),))
    for i, expected in enumerate(scalar):
        if expected is ExpressionError:
            assert invalid[i], (text, envs[i])
        else:
            assert not invalid[i], (text, envs[i])
            assert values[i] == expected, (text, envs[i], values[i], expected)


@settings(max_examples=100, deadline=None)
@given(text=st.tuples(INT_EXPRESSIONS, st.sampled_from(["/", "+", "*"]), INT_EXPRESSIONS)
       .map(lambda t: f"({t[0]}) / ({t[2]}) {t[1]} 0.5"),
       points=st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40),
                                 st.integers(-3, 3)), min_size=1, max_size=10))
def test_vectorized_matches_scalar_with_true_division(
        text: str, points: list[tuple[int, int, int]]) -> None:
    envs = [dict(zip(_NAMES, p, strict=True)) for p in points]
    scalar = _scalar_outcomes(text, envs)
    arrays = {name: np.array([env[name] for env in envs], dtype=np.int64) for name in _NAMES}
    values, invalid = parse_expr(text).evaluate_masked(arrays)
    values = np.broadcast_to(values, (len(envs),))
    invalid = np.broadcast_to(invalid, (len(envs),))
    for i, expected in enumerate(scalar):
        if expected is ExpressionError:
            assert invalid[i]
        else:
            assert not invalid[i]
            assert values[i] == expected


def test_no_eval_or_exec_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec must never run")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    expr = parse_expr("min(a, 4) * 2 if a > 0 else -1")
    assert expr.evaluate({"a": 7}) == 8
    assert expr.evaluate_vectorized({"a": np.array([-1, 1])}).tolist() == [-1, 2]


def test_directly_built_expr_is_checked_too() -> None:
    from workbench.core.expr import Expr

    assert Expr("a + 1", frozenset()).evaluate({"a": 2}) == 3
    assert Expr("a + 1", frozenset()).names == frozenset({"a"})
    with pytest.raises(ExpressionError):
        Expr("a.b", frozenset())
