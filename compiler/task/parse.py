"""Task expressions: text → a small syntax tree with character offsets (or a located syntax error).

Where it sits: compiler/task, first step of the task compiler (parse → check.py types and resolves
names → lower.py resolves indices against the model). The grammar is `task.lark` (LALR). Offsets are
0-based character positions in the expression text, [start, end); `check.py` maps them into the
scene file for diagnostics. No jax.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib

import lark

MAX_LENGTH = 4000   # characters; the longest real expressions are a few hundred
MAX_DEPTH = 48      # nesting of the syntax tree; the checker and the evaluator recurse on it


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """One syntax node.

    kind: "number" (value float), "string" (value str), "true", "false", "name" (value str),
      "call" (value: function name; children: arguments), "vector" (children: items),
      "attr" (value: field name; children: (operand,)), "item" (children: (operand, subscript)),
      "index" (children: (expr,)), "slice" (children: (lo or None, hi or None)),
      "neg", "pos", "not_" (children: (operand,)), "binary"/"pow" (value: operator; children: (a, b)),
      "and_", "or_" (children: (a, b)), "compare" (value: operators tuple; children: operands)
    start, end: character offsets of the node in the expression, [start, end)
    name_start, name_end: for "attr" and "call", the offsets of the field or function name
    """

    kind: str
    children: tuple = ()
    value: object = None
    start: int = 0
    end: int = 0
    name_start: int = 0
    name_end: int = 0


class ParseError(Exception):
    """A syntax problem at [start, end) of the text; `code` is the diagnostic code."""

    def __init__(self, code: str, message: str, start: int, end: int, hint: str = ""):
        super().__init__(message)
        self.code, self.message, self.start, self.end, self.hint = code, message, start, end, hint


@functools.lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = (pathlib.Path(__file__).with_name("task.lark")).read_text(encoding="utf-8")
    return lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                     maybe_placeholders=True)


_TOKEN_WORDS = {
    "NUMBER": "a number", "NAME": "a name", "STRING": "a quoted name", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "DOT": "'.'", "COLON": "':'", "ADD": "'+' or '-'",
    "MUL": "'*' or '/'", "POW": "'^'", "COMPARE": "a comparison", "MINUS": "'-'", "PLUS": "'+'",
    "AND": "'and'", "OR": "'or'", "NOT": "'not'", "TRUE": "'true'", "FALSE": "'false'",
    "$END": "the end of the expression",
}


def _expected_words(expected) -> str:
    words = sorted({_TOKEN_WORDS.get(t, t.lower()) for t in expected})
    if len(words) > 6:
        return ""
    return "expected " + ", ".join(words)


def parse(text: str) -> Node:
    """Parse one expression. Raises `ParseError` (E601 syntax, E611 too long / too deep)."""
    if len(text) > MAX_LENGTH:
        raise ParseError("E611", f"the expression is {len(text)} characters long; the limit is "
                         f"{MAX_LENGTH}", 0, 1, "split it into several terms")
    if not text.strip():
        raise ParseError("E609", "the expression is empty", 0, 1)
    # Bracket depth bounds the tree depth cheaply before lark builds anything.
    depth = deepest = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError("E611", f"the expression nests more than {MAX_DEPTH} brackets deep",
                                 i, i + 1)
            deepest = max(deepest, depth)
        elif ch in ")]":
            depth -= 1
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedCharacters as e:
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        hint = ""
        if ch in "&|!" or ch == "=":
            hint = {"&": "write 'and'", "|": "write 'or'", "!": "write 'not' (or '!=')",
                    "=": "compare with '=='"}[ch]
        raise ParseError("E601", f"unexpected character {ch!r}", e.pos_in_stream, e.pos_in_stream + 1,
                         hint) from None
    except lark.exceptions.UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            raise ParseError("E601", "the expression ends too early", len(text), len(text) + 1,
                             _expected_words(e.expected)) from None
        start = tok.start_pos if tok.start_pos is not None else 0
        raise ParseError("E601", f"unexpected {str(tok)!r}", start, start + max(1, len(str(tok))),
                         _expected_words(e.expected)) from None
    except lark.exceptions.UnexpectedEOF:
        raise ParseError("E601", "the expression ends too early", len(text), len(text) + 1) from None
    node = _convert(tree, 0)
    return node


def _pos(tree) -> tuple[int, int]:
    if isinstance(tree, lark.Token):
        return tree.start_pos, tree.end_pos
    return tree.meta.start_pos, tree.meta.end_pos


def _convert(tree, depth: int) -> Node:
    if depth > 4 * MAX_DEPTH:  # long operator chains nest without brackets
        start, end = _pos(tree)
        raise ParseError("E611", "the expression nests too deeply", start, end,
                         "split it into several terms")
    if isinstance(tree, lark.Token):
        raise AssertionError(f"unexpected token {tree!r}")  # every token is wrapped by a rule
    start, end = _pos(tree)
    kids = tree.children
    data = tree.data
    sub = functools.partial(_convert, depth=depth + 1)
    if data == "number":
        return Node("number", value=float(kids[0]), start=start, end=end)
    if data == "string":
        return Node("string", value=str(kids[0])[1:-1], start=start, end=end)
    if data in ("true", "false"):
        return Node(data, start=start, end=end)
    if data == "name":
        return Node("name", value=str(kids[0]), start=start, end=end)
    if data == "call":
        name, *args = kids
        args = [a for a in args if a is not None]
        return Node("call", tuple(sub(a) for a in args), str(name), start, end,
                    name.start_pos, name.end_pos)
    if data == "vector":
        items = [a for a in kids if a is not None]
        return Node("vector", tuple(sub(a) for a in items), start=start, end=end)
    if data == "attr":
        operand, name = kids
        return Node("attr", (sub(operand),), str(name), start, end, name.start_pos, name.end_pos)
    if data == "item":
        operand, subscript = kids
        return Node("item", (sub(operand), sub(subscript)), start=start, end=end)
    if data == "index":
        return Node("index", (sub(kids[0]),), start=start, end=end)
    if data == "slice":
        lo, hi = kids
        return Node("slice", (None if lo is None else sub(lo), None if hi is None else sub(hi)),
                    start=start, end=end)
    if data in ("neg", "pos", "not_"):
        return Node(data, (sub(kids[0]),), start=start, end=end)
    if data in ("binary", "pow"):
        a, op, b = kids
        return Node(data, (sub(a), sub(b)), str(op), start, end, op.start_pos, op.end_pos)
    if data in ("and_", "or_"):
        return Node(data, (sub(kids[0]), sub(kids[1])), start=start, end=end)
    if data == "compare":
        operands = kids[0::2]
        ops = tuple(str(k) for k in kids[1::2])
        return Node("compare", tuple(sub(k) for k in operands), ops, start, end)
    raise AssertionError(f"unknown rule {data}")
