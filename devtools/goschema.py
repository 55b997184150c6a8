"""Read Terraform resource schemas out of a provider's Go source, without Go.

Terraform providers built on terraform-plugin-sdk declare each resource as a `schema.Resource`
literal whose `Schema` map lists every argument (Type, Required/Optional/Computed, ForceNew,
ValidateFunc, Elem, MaxItems...). This module tokenizes Go, parses the expression subset those
literals use (composite literals, calls, selectors, string concatenation, function literals) and
interprets the result into plain data. Constants are resolved across the package and the provider's
own imported packages.

It is deliberately strict: a schema key it does not know, a value it cannot evaluate where a fact
depends on it, or a declaration it cannot find raises GoSchemaError naming the file and line, so
facts are never dropped silently. A validator that is a call to a helper whose meaning is not
known here is kept as {"kind": "opaque"} with its location, for the caller to report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional


class GoSchemaError(Exception):
    """A construct the parser or the interpreter cannot handle: where, and what."""


class Unresolved(GoSchemaError):
    """A value that is not a constant the source declares (the caller says where it was needed)."""


# ---------------------------------------------------------------- tokenizer

@dataclass(frozen=True)
class Token:
    kind: str  # ident, int, float, string, rune, op, eof
    text: str
    line: int
    value: Any = None


_OPERATORS = sorted("""&& || == != <= >= := ... << >> &^ ++ -- += -= *= /= |= &= <- { } ( ) [ ] , ; : . & * + - / % ! < > = | ^ ~""".split(),
                    key=len, reverse=True)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "0": "\0"}


def _unquote(body: str, where: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in "uU":
            width = 4 if nxt == "u" else 8
            out.append(chr(int(body[i + 2:i + 2 + width], 16)))
            i += 2 + width
        elif nxt == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            raise GoSchemaError(f"{where}: unknown escape \\{nxt}")
    return "".join(out)


def tokenize(text: str, where: str = "<go>", first_line: int = 1) -> list[Token]:
    tokens: list[Token] = []
    i, line, n = 0, first_line, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in " \t\r":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise GoSchemaError(f"{where}:{line}: unterminated comment")
            line += text.count("\n", i, end)
            i = end + 2
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise GoSchemaError(f"{where}:{line}: unterminated string")
            tokens.append(Token("string", text[i:j + 1], line, _unquote(text[i + 1:j], f"{where}:{line}")))
            i = j + 1
        elif ch == "`":
            j = text.find("`", i + 1)
            if j < 0:
                raise GoSchemaError(f"{where}:{line}: unterminated raw string")
            tokens.append(Token("string", text[i:j + 1], line, text[i + 1:j]))
            line += text.count("\n", i, j)
            i = j + 1
        elif ch == "'":
            j = i + 1
            while text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            tokens.append(Token("rune", text[i:j + 1], line, _unquote(text[i + 1:j], f"{where}:{line}")))
            i = j + 1
        elif ch.isalpha() or ch == "_":
            m = _IDENT.match(text, i)
            tokens.append(Token("ident", m.group(), line))
            i = m.end()
        elif ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
            m = _NUMBER.match(text, i)
            raw = m.group().replace("_", "")
            if raw.lower().startswith("0x"):
                tokens.append(Token("int", m.group(), line, int(raw, 16)))
            elif any(c in raw for c in ".eE"):
                tokens.append(Token("float", m.group(), line, float(raw)))
            else:
                tokens.append(Token("int", m.group(), line, int(raw, 8) if len(raw) > 1 and raw[0] == "0" else int(raw)))
            i = m.end()
        else:
            for op in _OPERATORS:
                if text.startswith(op, i):
                    tokens.append(Token("op", op, line))
                    i += len(op)
                    break
            else:
                raise GoSchemaError(f"{where}:{line}: unexpected character {ch!r}")
    tokens.append(Token("eof", "", line))
    return tokens


# ---------------------------------------------------------------- syntax tree

@dataclass
class Node:
    line: int


@dataclass
class Lit(Node):
    value: Any


@dataclass
class Ident(Node):
    name: str


@dataclass
class Sel(Node):
    x: Node
    name: str


@dataclass
class Call(Node):
    fn: Node
    args: list


@dataclass
class Composite(Node):
    type: Optional[Node]  # None: type elided inside an outer literal
    elements: list  # (key node or None, value node)


@dataclass
class Unary(Node):
    op: str
    x: Node


@dataclass
class Binary(Node):
    op: str
    x: Node
    y: Node


@dataclass
class FuncLit(Node):
    pass


@dataclass
class TypeExpr(Node):
    text: str  # []string, map[string]*schema.Schema, *schema.Resource ...


@dataclass
class Index(Node):
    x: Node
    index: Node


_PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
               "+": 4, "-": 4, "|": 4, "^": 4, "*": 5, "/": 5, "%": 5, "<<": 5, ">>": 5, "&": 5, "&^": 5}


class Parser:
    """Recursive descent over the expression subset of Go that schema literals use."""

    def __init__(self, tokens: list[Token], where: str):
        self.tokens = tokens
        self.pos = 0
        self.where = where

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def fail(self, message: str, token: Optional[Token] = None) -> GoSchemaError:
        token = token or self.peek()
        return GoSchemaError(f"{self.where}:{token.line}: {message} (at {token.text!r})")

    def expect(self, text: str) -> Token:
        token = self.next()
        if token.text != text or token.kind not in ("op", "ident"):
            raise self.fail(f"expected {text!r}", token)
        return token

    def accept(self, text: str) -> bool:
        if self.peek().kind in ("op", "ident") and self.peek().text == text:
            self.pos += 1
            return True
        return False

    # expressions
    def expression(self, min_prec: int = 1) -> Node:
        left = self.unary()
        while True:
            token = self.peek()
            prec = _PRECEDENCE.get(token.text) if token.kind == "op" else None
            if prec is None or prec < min_prec:
                return left
            self.next()
            right = self.expression(prec + 1)
            left = Binary(token.line, token.text, left, right)

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "op" and token.text in ("&", "*", "-", "+", "!", "^", "<-"):
            self.next()
            return Unary(token.line, token.text, self.unary())
        return self.primary()

    def primary(self) -> Node:
        node = self.operand()
        while True:
            token = self.peek()
            if token.text == "." and token.kind == "op":
                self.next()
                name = self.next()
                if name.kind != "ident":
                    raise self.fail("expected a name after '.'", name)
                node = Sel(name.line, node, name.text)
            elif token.text == "(" and token.kind == "op":
                self.next()
                args = []
                while not self.accept(")"):
                    args.append(self.expression())
                    self.accept("...")
                    if not self.accept(","):
                        self.expect(")")
                        break
                node = Call(token.line, node, args)
            elif token.text == "{" and token.kind == "op" and _is_type_like(node):
                node = self.composite(node)
            elif token.text == "[" and token.kind == "op":
                self.next()
                index = self.expression()
                self.expect("]")
                node = Index(token.line, node, index)
            else:
                return node

    def operand(self) -> Node:
        token = self.peek()
        if token.kind in ("string", "int", "float", "rune"):
            self.next()
            return Lit(token.line, token.value)
        if token.kind == "ident":
            if token.text == "func":
                return self.func_literal()
            if token.text in ("map", "chan", "struct", "interface"):
                return self.type_expression()
            self.next()
            return Ident(token.line, token.text)
        if token.kind == "op" and token.text == "[":
            return self.type_expression()
        if token.kind == "op" and token.text == "(":
            self.next()
            inner = self.expression()
            self.expect(")")
            return inner
        if token.kind == "op" and token.text == "{":  # a literal whose type the outer literal elides
            return self.composite(None)
        raise self.fail("cannot parse this expression")

    def type_expression(self) -> TypeExpr:
        """[]T, [N]T, map[K]V, *T, func(...)..., interface{}, struct{...} as text."""
        start = self.peek()
        parts: list[str] = []

        def one_type() -> None:
            token = self.next()
            if token.text == "*":
                parts.append("*")
                one_type()
            elif token.text == "[":
                parts.append("[")
                while not self.accept("]"):
                    parts.append(self.next().text)
                parts.append("]")
                one_type()
            elif token.text == "map":
                parts.append("map[")
                self.expect("[")
                one_type()
                self.expect("]")
                parts.append("]")
                one_type()
            elif token.text in ("interface", "struct"):
                parts.append(token.text + "{")
                self.expect("{")
                depth = 1
                while depth:
                    inner = self.next()
                    depth += {"{": 1, "}": -1}.get(inner.text, 0) if inner.kind == "op" else 0
                parts.append("}")
            elif token.kind == "ident":
                parts.append(token.text)
                while self.peek().text == "." and self.peek(1).kind == "ident":
                    self.next()
                    parts.append("." + self.next().text)
            else:
                raise self.fail("cannot parse this type", token)

        one_type()
        return TypeExpr(start.line, "".join(parts))

    def composite(self, type_node: Optional[Node]) -> Composite:
        start = self.expect("{")
        elements = []
        while not self.accept("}"):
            first = self.expression()
            if self.accept(":"):
                elements.append((first, self.expression()))
            else:
                elements.append((None, first))
            if not self.accept(","):
                self.expect("}")
                break
        return Composite(start.line, type_node, elements)

    def func_literal(self) -> FuncLit:
        start = self.expect("func")
        depth = 0
        while True:  # the signature: parameters and results, up to the body's brace
            token = self.next()
            if token.kind == "eof":
                raise self.fail("unterminated function literal", start)
            if token.kind == "op" and token.text in ("(", "["):
                depth += 1
            elif token.kind == "op" and token.text in (")", "]"):
                depth -= 1
            elif token.kind == "op" and token.text == "{" and depth == 0:
                # `interface{}` in a signature opens and closes at once
                if self.tokens[self.pos - 2].text == "interface":
                    self.expect("}")
                    continue
                break
        depth = 1
        while depth:
            token = self.next()
            if token.kind == "eof":
                raise self.fail("unterminated function body", start)
            if token.kind == "op":
                depth += {"{": 1, "}": -1}.get(token.text, 0)
        return FuncLit(start.line)


def _is_type_like(node: Node) -> bool:
    return isinstance(node, (Ident, Sel, TypeExpr)) or (isinstance(node, Index) and isinstance(node.x, (Ident, Sel)))


def parse_expression(text: str, where: str, first_line: int = 1) -> Node:
    parser = Parser(tokenize(text, where, first_line), where)
    node = parser.expression()
    return node


def dotted(node: Node) -> Optional[str]:
    """`validation.StringInSlice` -> "validation.StringInSlice"; None for anything else."""
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Sel):
        inner = dotted(node.x)
        return f"{inner}.{node.name}" if inner else None
    return None


# ---------------------------------------------------------------- source tree and declarations

_IMPORT_LINE = re.compile(r'^\s*(?:(\w+|\.|_)\s+)?"([^"]+)"\s*$')


@dataclass
class GoFile:
    path: str  # relative to the checkout root
    text: str

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def imports(self) -> dict[str, str]:
        """alias -> import path (the last path element when no alias is given)."""
        found: dict[str, str] = {}
        block = re.search(r"^import\s*\((.*?)^\)", self.text, re.S | re.M)
        lines = block.group(1).splitlines() if block else []
        lines += re.findall(r'^import\s+((?:\w+\s+)?"[^"]+")', self.text, re.M)
        for line in lines:
            m = _IMPORT_LINE.match(line.split("//")[0])
            if m:
                alias = m.group(1) or m.group(2).rsplit("/", 1)[-1]
                found[alias] = m.group(2)
        return found


class SourceTree:
    """A checkout of a provider: Go packages by directory, declarations found on demand.

    `external` maps other Go modules the provider imports (module path -> a checkout of the version
    its go.mod requires), so constants such as oss.ACLPrivate resolve from their real source.
    Directories of the provider are relative to `root`; those of another module are
    "<module path>/<sub directory>".
    """

    def __init__(self, root: Path, module: str, external: Optional[dict[str, Path]] = None):
        self.root = Path(root)
        self.module = module  # the Go module path, e.g. github.com/aliyun/terraform-provider-alicloud
        self.external = {name: Path(path) for name, path in (external or {}).items()}
        self._packages: dict[str, list[GoFile]] = {}
        self.values: dict[tuple[str, str], Any] = {}  # (directory, name) -> evaluated constant

    def _location(self, directory: str) -> tuple[Path, str]:
        for module, root in self.external.items():
            if directory == module or directory.startswith(module + "/"):
                return root / directory[len(module):].lstrip("/"), module + "@"
        return self.root / directory, ""

    def package(self, directory: str) -> list[GoFile]:
        if directory not in self._packages:
            base, label = self._location(directory)
            if not base.is_dir():
                raise GoSchemaError(f"no Go package at {directory} ({base})")
            root = base if label else self.root
            self._packages[directory] = [
                GoFile(label + str(p.relative_to(root)) if not label else f"{directory}/{p.name}",
                       p.read_text(encoding="utf-8", errors="replace"))
                for p in sorted(base.glob("*.go")) if not p.name.endswith("_test.go")]
        return self._packages[directory]

    def directory_of_import(self, import_path: str) -> Optional[str]:
        if import_path == self.module or import_path.startswith(self.module + "/"):
            return import_path[len(self.module):].lstrip("/")
        if any(import_path == m or import_path.startswith(m + "/") for m in self.external):
            return import_path
        return None

    def find_func(self, directory: str, name: str) -> tuple[GoFile, int]:
        """The file and offset of the `{` that opens func `name`'s body."""
        pattern = re.compile(rf"^func\s+{re.escape(name)}\s*\([^)]*\)[^{{\n]*\{{", re.M)
        hits = [(f, m) for f in self.package(directory) for m in pattern.finditer(f.text)]
        if len(hits) != 1:
            raise GoSchemaError(f"func {name}: found {len(hits)} definitions in {directory}")
        file, match = hits[0]
        return file, match.end() - 1

    def find_value(self, directory: str, name: str) -> tuple[GoFile, int, str]:
        """A package-level const or var: (file, offset of its value expression, kind).

        Only declarations at the top level count: `const X = ...`, `var X = ...`, or a line of a
        `const (` / `var (` block. A same-named local variable inside a function is not one.
        """
        line_re = re.compile(rf"^(?:(const|var)[ \t]+)?[ \t]*{re.escape(name)}(?:[ \t]+[\w.*\[\]]+)?[ \t]*=(?!=)", re.M)
        hits = []
        for file in self.package(directory):
            for m in line_re.finditer(file.text):
                kind = m.group(1) or self._enclosing_block(file.text, m.start())
                if kind:
                    hits.append((file, m.end(), kind))
        if not hits:
            raise Unresolved(f"no package-level const or var {name} in {directory}")
        if len(hits) > 1:
            raise GoSchemaError(f"{name} is declared {len(hits)} times in {directory}: "
                                + ", ".join(f"{f.path}:{f.line_of(o)}" for f, o, _ in hits))
        return hits[0]

    @staticmethod
    def _enclosing_block(text: str, offset: int) -> Optional[str]:
        """'const' or 'var' when `offset` sits inside a top-level `const (` / `var (` block."""
        start = text.rfind("\n", 0, offset) + 1
        if start == 0 or text[start] not in " \t":
            return None
        cursor = start - 1
        while cursor > 0:
            begin = text.rfind("\n", 0, cursor) + 1
            line = text[begin:cursor]
            cursor = begin - 1
            if not line.strip() or line[0] in " \t" or line.startswith("//"):
                continue
            m = re.match(r"(const|var)\s*\(", line)
            return m.group(1) if m else None
        return None

    def is_type(self, directory: str, name: str) -> bool:
        pattern = re.compile(rf"^(?:type\s+{re.escape(name)}\s|\t{re.escape(name)}\s+(?:string|int|int64|float64|bool)\s*$)", re.M)
        return any(pattern.search(f.text) for f in self.package(directory))


# ---------------------------------------------------------------- constant evaluation

_CONVERSIONS = {"string", "int", "int32", "int64", "float32", "float64", "bool", "uint", "uint32", "uint64"}


@dataclass
class Scope:
    """Where an expression lives: its package directory and the file's imports."""
    tree: SourceTree
    directory: str
    file: GoFile
    external: dict[str, Any] = field(default_factory=dict)  # "pkg.Name" from outside the repo -> value
    locals: dict[str, Node] = field(default_factory=dict)  # a function body's `name := ...` literals

    def for_import(self, alias: str) -> "Scope":
        path = self.file.imports().get(alias)
        if path is None:
            raise Unresolved(f"{self.file.path}: {alias} is not an imported package")
        directory = self.tree.directory_of_import(path)
        if directory is None:
            raise Unresolved(f"{self.file.path}: {alias} ({path}) is outside the provider's repository;"
                             " pass a checkout of its module (see --module)")
        files = self.tree.package(directory)
        return Scope(self.tree, directory, files[0] if files else self.file, self.external)


def evaluate(node: Node, scope: Scope, depth: int = 0) -> Any:
    """The constant value of `node`: strings, numbers, bools, lists; Unresolved otherwise."""
    if depth > 40:
        raise Unresolved(f"{scope.file.path}:{node.line}: constant definitions nest too deep")
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Ident):
        if node.name in ("true", "false"):
            return node.name == "true"
        if node.name == "nil":
            return None
        return _package_value(scope, node.name, depth)
    if isinstance(node, Sel):
        name = dotted(node)
        if name in scope.external:
            return scope.external[name]
        if isinstance(node.x, Ident):
            return _package_value(scope.for_import(node.x.name), node.name, depth)
        raise Unresolved(f"{scope.file.path}:{node.line}: cannot evaluate {name or 'a selector'}")
    if isinstance(node, Binary):
        x, y = evaluate(node.x, scope, depth + 1), evaluate(node.y, scope, depth + 1)
        ops: dict[str, Callable[[Any, Any], Any]] = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                                                     "*": lambda a, b: a * b, "/": lambda a, b: a // b if isinstance(a, int) else a / b}
        if node.op not in ops:
            raise Unresolved(f"{scope.file.path}:{node.line}: operator {node.op} in a constant")
        return ops[node.op](x, y)
    if isinstance(node, Unary) and node.op == "-":
        return -evaluate(node.x, scope, depth + 1)
    if isinstance(node, Call) and len(node.args) == 1:
        name = dotted(node.fn)
        if name in _CONVERSIONS or (isinstance(node.fn, Ident) and scope.tree.is_type(scope.directory, node.fn.name)):
            return evaluate(node.args[0], scope, depth + 1)
        if isinstance(node.fn, Sel) and isinstance(node.fn.x, Ident) and name not in scope.external:
            try:
                target = scope.for_import(node.fn.x.name)
            except Unresolved:
                target = None
            if target and scope.tree.is_type(target.directory, node.fn.name):
                return evaluate(node.args[0], scope, depth + 1)
    if isinstance(node, Composite) and isinstance(node.type, TypeExpr) and node.type.text.startswith("[]"):
        return [evaluate(value, scope, depth + 1) for _, value in node.elements]
    raise Unresolved(f"{scope.file.path}:{node.line}: cannot evaluate {type(node).__name__} {dotted(node) or ''}".rstrip())


def _package_value(scope: Scope, name: str, depth: int) -> Any:
    key = (scope.directory, name)
    if key not in scope.tree.values:
        scope.tree.values[key] = _declared_value(scope, name, depth)
    return scope.tree.values[key]


def _declared_value(scope: Scope, name: str, depth: int) -> Any:
    file, offset, _ = scope.tree.find_value(scope.directory, name)
    line = file.line_of(offset)
    parser = Parser(tokenize(file.text[offset:], file.path, line), file.path)
    node = parser.expression()
    return evaluate(node, Scope(scope.tree, scope.directory, file, scope.external), depth + 1)


# ---------------------------------------------------------------- schema interpretation

_TYPES = {"TypeString": "string", "TypeInt": "int", "TypeBool": "bool", "TypeFloat": "float",
          "TypeList": "list", "TypeSet": "set", "TypeMap": "map"}
_FLAGS = {"Required": "required", "Optional": "optional", "Computed": "computed", "ForceNew": "force_new",
          "Sensitive": "sensitive"}
_LISTS = {"ConflictsWith": "conflicts_with", "ExactlyOneOf": "exactly_one_of", "AtLeastOneOf": "at_least_one_of",
          "RequiredWith": "required_with"}
# Keys that carry no fact we use (documentation, hashing, plan-time niceties).
_IGNORED = {"Description", "Set", "InputDefault", "ConfigMode", "ComputedWhen", "DiffSuppressOnRefresh",
            "WriteOnly", "PromoteSingle"}


def _where(scope: Scope, node: Node) -> str:
    return f"{scope.file.path}:{node.line}"


def _int_args(call: Call, scope: Scope) -> list:
    return [evaluate(arg, scope) for arg in call.args]


def _regex(node: Node, scope: Scope) -> str:
    if isinstance(node, Call) and dotted(node.fn) in ("regexp.MustCompile", "regexp.MustCompilePOSIX"):
        return evaluate(node.args[0], scope)  # RE2 syntax, kept as the provider wrote it
    raise Unresolved(f"{_where(scope, node)}: expected regexp.MustCompile(...)")


def _all(*parts: dict) -> dict:
    return {"kind": "all", "of": list(parts)}


# Validators by their final name: what they accept, read from their definitions (the SDK's
# helper/validation package, alicloud/validators.go, tencentcloud/common/validators.go; each helper
# defined in the provider's repository also gets `defined_at` in the output).
_VALIDATOR_CALLS: dict[str, Callable[[Call, Scope], dict]] = {
    "StringInSlice": lambda c, s: {"kind": "one_of", "values": evaluate(c.args[0], s),
                                   **({"ignore_case": True} if len(c.args) > 1 and evaluate(c.args[1], s) else {})},
    "IntBetween": lambda c, s: dict(zip(("kind", "min", "max"), ["int_range", *_int_args(c, s)])),
    "IntAtLeast": lambda c, s: {"kind": "int_range", "min": evaluate(c.args[0], s)},
    "IntAtMost": lambda c, s: {"kind": "int_range", "max": evaluate(c.args[0], s)},
    "IntInSlice": lambda c, s: {"kind": "int_one_of", "values": evaluate(c.args[0], s)},
    "FloatBetween": lambda c, s: dict(zip(("kind", "min", "max"), ["float_range", *_int_args(c, s)])),
    "StringLenBetween": lambda c, s: dict(zip(("kind", "min", "max", "unit"), ["length", *_int_args(c, s), "bytes"])),
    "StringMatch": lambda c, s: {"kind": "regex", "pattern": _regex(c.args[0], s)},
    "StringDoesNotMatch": lambda c, s: {"kind": "not_regex", "pattern": _regex(c.args[0], s)},
    "SingleIP": lambda c, s: {"kind": "ip"},
    "IsCIDRNetwork": lambda c, s: {"kind": "cidr"},
    "ValidateRFC3339TimeString": lambda c, s: {"kind": "rfc3339"},
    "ValidateAllowedStringValue": lambda c, s: {"kind": "one_of", "values": evaluate(c.args[0], s)},
    "ValidateAllowedStringValueIgnoreCase": lambda c, s: {"kind": "one_of", "values": evaluate(c.args[0], s),
                                                          "ignore_case": True},
    "ValidateIntegerInRange": lambda c, s: dict(zip(("kind", "min", "max"), ["int_range", *_int_args(c, s)])),
    "ValidateIntegerMin": lambda c, s: {"kind": "int_range", "min": evaluate(c.args[0], s)},
    "ValidateAllowedIntValue": lambda c, s: {"kind": "int_one_of", "values": evaluate(c.args[0], s)},
    "ValidateStringLengthInRange": lambda c, s: dict(zip(("kind", "min", "max", "unit"),
                                                         ["length", *_int_args(c, s), "runes"])),
    "ValidateStringPrefix": lambda c, s: {"kind": "prefix", "values": [evaluate(a, s) for a in c.args]},
    "ValidateStringSuffix": lambda c, s: {"kind": "suffix", "values": [evaluate(a, s) for a in c.args]},
}
_VALIDATOR_VALUES: dict[str, dict] = {
    "StringIsJSON": {"kind": "json"},
    "StringIsNotEmpty": {"kind": "length", "min": 1, "unit": "bytes"},
    "IsRFC3339Time": {"kind": "rfc3339"},
    "IsCIDR": {"kind": "cidr"},
    "IsIPAddress": {"kind": "ip"},
    "NoZeroValues": {"kind": "nonzero"},
    "ValidateStringNumber": {"kind": "number_string"},
    "ValidateCIDRNetworkAddress": {"kind": "cidr_network"},
    "ValidateAsScheduleTimestamp": {"kind": "rfc3339"},
    "ValidateNotEmpty": {"kind": "length", "min": 1, "unit": "bytes"},
    "ValidateIp": {"kind": "ip"},
    # terraform-provider-huaweicloud utils/validators.go: ValidateCIDR wants the network written as
    # net.ParseCIDR prints it (line 70), ValidateIP an address as net.ParseIP prints it (line 124).
    "ValidateCIDR": {"kind": "cidr_network"},
    "ValidateIP": {"kind": "ip"},
    "ValidateImageID": {"kind": "prefix", "values": ["img-"]},
    "ValidateInstanceType": {"kind": "contains", "value": "."},
    "ValidateKeyPairName": _all({"kind": "length", "min": 1, "max": 25, "unit": "bytes"},
                                {"kind": "regex", "pattern": "^[a-zA-Z0-9_]+$"}),
    "ValidateCosBucketName": _all({"kind": "length", "min": 1, "max": 60, "unit": "bytes"},
                                  {"kind": "regex", "pattern": "^[a-z0-9]([a-z0-9-]*[a-z0-9])?-[0-9]{10}$"}),
}
_COMBINATORS = {"All": "all", "Any": "any"}
_UNWRAP = {"ToDiagFunc", "ValidateDiagFunc"}


def _helper_location(scope: Scope, fn: Node) -> Optional[str]:
    """file:line of a validator defined in the provider's own repository; None for the SDK's."""
    try:
        if isinstance(fn, Ident):
            file, offset = scope.tree.find_func(scope.directory, fn.name)
        elif isinstance(fn, Sel) and isinstance(fn.x, Ident):
            target = scope.for_import(fn.x.name)
            file, offset = scope.tree.find_func(target.directory, fn.name)
        else:
            return None
    except GoSchemaError:
        return None
    return f"{file.path}:{file.line_of(offset)}"


def validator(node: Node, scope: Scope) -> dict:
    """A ValidateFunc as data; {"kind": "opaque"} with its location when its meaning is unknown here."""
    if isinstance(node, Call):
        name = dotted(node.fn) or ""
        final = name.rsplit(".", 1)[-1]
        if final in _UNWRAP and len(node.args) == 1:
            return validator(node.args[0], scope)
        if final in _COMBINATORS:
            return {"kind": _COMBINATORS[final], "of": [validator(arg, scope) for arg in node.args]}
        if final in _VALIDATOR_CALLS:
            try:
                facts = _VALIDATOR_CALLS[final](node, scope)
            except Unresolved as error:
                raise GoSchemaError(f"{_where(scope, node)}: the arguments of {name} cannot be evaluated: {error}") from error
            return _located(facts, scope, node.fn)
        return {"kind": "opaque", "func": name or "call", "at": _where(scope, node)}
    name = dotted(node)
    if name is not None:
        final = name.rsplit(".", 1)[-1]
        if final in _VALIDATOR_VALUES:
            return _located(dict(_VALIDATOR_VALUES[final]), scope, node)
        return {"kind": "opaque", "func": name, "at": _helper_location(scope, node) or _where(scope, node)}
    if isinstance(node, FuncLit):
        return {"kind": "opaque", "func": "inline", "at": _where(scope, node)}
    raise GoSchemaError(f"{_where(scope, node)}: cannot read this validator")


def _located(facts: dict, scope: Scope, fn: Node) -> dict:
    where = _helper_location(scope, fn)
    if where:
        facts["defined_at"] = where
    return facts


def _named_or_inline(node: Node, scope: Scope) -> str:
    return dotted(node) or f"inline func at {_where(scope, node)}"


def _strip_address(node: Node) -> Node:
    return node.x if isinstance(node, Unary) and node.op == "&" else node


def _returned_literal(tree: SourceTree, scope: Scope, call: Call) -> tuple[Node, Scope]:
    """The value a schema helper (tagsSchema(), common.SchemaChargingMode(nil)) returns, and the scope it
    lives in. Its parameters are not bound: a field that reads one evaluates as Unresolved (a list such as
    ConflictsWith is then kept as "unevaluated"), a flag or validator that reads one stops the run."""
    fn = call.fn
    target = scope
    if isinstance(fn, Sel) and isinstance(fn.x, Ident):
        target = scope.for_import(fn.x.name)
        name = fn.name
    elif isinstance(fn, Ident):
        name = fn.name
    else:
        raise GoSchemaError(f"{_where(scope, call)}: cannot follow this call")
    file, brace = tree.find_func(target.directory, name)
    return _return_expression(file, brace, Scope(tree, target.directory, file, scope.external))


def _return_expression(file: GoFile, brace: int, scope: Scope) -> tuple[Node, Scope]:
    """The expression of a function body's top-level `return`, with the body's `name := literal`
    locals (a shared rule map, say) in the returned scope. Other statements are not followed."""
    tokens = tokenize(file.text[brace:], file.path, file.line_of(brace))
    parser = Parser(tokens, file.path)
    parser.expect("{")
    locals_: dict[str, Node] = {}
    depth = 1
    while depth:
        token = parser.peek()
        if token.kind == "eof":
            break
        if token.kind == "ident" and depth == 1 and parser.peek(1).text == ":=":
            parser.pos += 2
            locals_[token.text] = parser.expression()
        elif token.kind == "ident" and token.text == "return" and depth == 1:
            parser.next()
            inner = Scope(scope.tree, scope.directory, scope.file, scope.external, {**scope.locals, **locals_})
            returned = parser.expression()
            # `obj := schema.Schema{...}; ...; return &obj` (terraform-provider-huaweicloud's helpers): the
            # literal itself. Statements between them (an optional Description) are not followed.
            local = _strip_address(returned)
            if isinstance(local, Ident) and local.name in locals_:
                return locals_[local.name], inner
            return returned, inner
        else:
            parser.next()
            if token.kind == "op" and token.text in ("{", "}"):
                depth += 1 if token.text == "{" else -1
    raise GoSchemaError(f"{file.path}:{file.line_of(brace)}: no top-level return in this function")


def field_facts(node: Node, scope: Scope) -> dict:
    """One schema.Schema literal as data."""
    node = _strip_address(node)
    if isinstance(node, Call):
        inner, inner_scope = _returned_literal(scope.tree, scope, node)
        facts = field_facts(inner, inner_scope)
        facts.setdefault("via", f"{dotted(node.fn)}() at {inner_scope.file.path}:{inner.line}")
        return facts
    if isinstance(node, Ident) and node.name not in ("true", "false", "nil"):
        # A package-level `var fooSchema = &schema.Schema{...}` (terraform-provider-huaweicloud's rules).
        file, offset, _ = scope.tree.find_value(scope.directory, node.name)
        parser = Parser(tokenize(file.text[offset:], file.path, file.line_of(offset)), file.path)
        facts = field_facts(parser.expression(), Scope(scope.tree, scope.directory, file, scope.external))
        facts.setdefault("via", f"{node.name} at {file.path}:{file.line_of(offset)}")
        return facts
    if not isinstance(node, Composite):
        raise GoSchemaError(f"{_where(scope, node)}: expected a schema.Schema literal, found {type(node).__name__}")
    facts: dict = {"line": node.line}
    for key, value in node.elements:
        name = dotted(key) if key is not None else None
        if name is None:
            raise GoSchemaError(f"{_where(scope, node)}: a schema.Schema element without a key")
        if name == "Type":
            type_name = dotted(value) or ""
            if type_name.rsplit(".", 1)[-1] not in _TYPES:
                raise GoSchemaError(f"{_where(scope, value)}: unknown schema type {type_name}")
            facts["type"] = _TYPES[type_name.rsplit(".", 1)[-1]]
        elif name in _FLAGS:
            if evaluate(value, scope):
                facts[_FLAGS[name]] = True
        elif name == "Default":
            try:
                facts["default"] = evaluate(value, scope)
            except Unresolved as error:
                raise GoSchemaError(f"{_where(scope, value)}: cannot evaluate the Default: {error}") from error
        elif name == "DefaultFunc":
            facts["default_func"] = _named_or_inline(value, scope)
        elif name in ("ValidateFunc", "ValidateDiagFunc"):
            facts["validate"] = validator(value, scope)
        elif name in ("MaxItems", "MinItems"):
            facts["max_items" if name == "MaxItems" else "min_items"] = evaluate(value, scope)
        elif name in _LISTS:
            try:
                facts[_LISTS[name]] = evaluate(value, scope)
            except Unresolved:
                facts[_LISTS[name]] = f"unevaluated at {_where(scope, value)}"
        elif name == "Deprecated":
            try:
                facts["deprecated"] = evaluate(value, scope) or True
            except Unresolved:
                facts["deprecated"] = True
        elif name == "Removed":  # kept in the schema to explain itself; no longer an argument
            facts["removed"] = evaluate(value, scope) or True
        elif name == "DiffSuppressFunc":
            facts["diff_suppress"] = _named_or_inline(value, scope)
        elif name == "StateFunc":
            facts["state_func"] = _named_or_inline(value, scope)
        elif name == "Elem":
            facts.update(_elem(value, scope))
        elif name in _IGNORED:
            continue
        else:
            raise GoSchemaError(f"{_where(scope, key)}: unknown schema.Schema key {name}")
    if "type" not in facts:
        raise GoSchemaError(f"{_where(scope, node)}: a schema.Schema without a Type")
    return facts


def _elem(node: Node, scope: Scope) -> dict:
    type_name = (dotted(node) or "").rsplit(".", 1)[-1]
    if type_name in _TYPES:  # `Elem: schema.TypeString`, the old SDK's shorthand
        return {"element": {"type": _TYPES[type_name]}}
    inner = _strip_address(node)
    if isinstance(inner, Call):
        inner, scope = _returned_literal(scope.tree, scope, inner)
        inner = _strip_address(inner)
    if not isinstance(inner, Composite):
        raise GoSchemaError(f"{_where(scope, node)}: cannot read this Elem")
    kind = (dotted(inner.type) or "").rsplit(".", 1)[-1] if inner.type is not None else ""
    if kind == "Resource":
        return {"block": block_facts(inner, scope)}
    if kind == "Schema":
        return {"element": field_facts(inner, scope)}
    raise GoSchemaError(f"{_where(scope, node)}: Elem of unknown kind {kind or '(elided)'}")


def block_facts(resource: Composite, scope: Scope) -> dict:
    """The fields of a schema.Resource literal: name -> field facts."""
    schema_node = None
    for key, value in resource.elements:
        if dotted(key) == "Schema":
            schema_node = value
    if schema_node is None:
        raise GoSchemaError(f"{_where(scope, resource)}: a schema.Resource without Schema")
    if isinstance(schema_node, Ident) and schema_node.name in scope.locals:
        schema_node = scope.locals[schema_node.name]
    if isinstance(schema_node, Call):
        schema_node, scope = _returned_literal(scope.tree, scope, schema_node)
    if not isinstance(schema_node, Composite):
        raise GoSchemaError(f"{_where(scope, schema_node)}: cannot read this Schema map")
    fields: dict = {}
    for key, value in schema_node.elements:
        if not isinstance(key, Lit) or not isinstance(key.value, str):
            raise GoSchemaError(f"{_where(scope, schema_node)}: a Schema map key that is not a string literal")
        if key.value in fields:
            raise GoSchemaError(f"{_where(scope, key)}: {key.value} is declared twice")
        fields[key.value] = field_facts(value, scope)
    return fields


@dataclass
class ResourceSchema:
    file: str
    line: int
    fields: dict
    customize_diff: Optional[str]
    force_new_in_customize_diff: list  # [{"field", "at"}]
    deprecation: Optional[str]


def resource_schema(tree: SourceTree, directory: str, func_name: str,
                    external: Optional[dict] = None) -> ResourceSchema:
    """The schema a resource constructor func (resourceAliCloudInstance) returns."""
    file, brace = tree.find_func(directory, func_name)
    scope = Scope(tree, directory, file, external or {})
    node, scope = _return_expression(file, brace, scope)
    literal = _strip_address(node)
    if not isinstance(literal, Composite) or (dotted(literal.type) or "").rsplit(".", 1)[-1] != "Resource":
        raise GoSchemaError(f"{file.path}:{node.line}: {func_name} does not return a schema.Resource literal")
    customize = deprecation = None
    for key, value in literal.elements:
        if dotted(key) == "CustomizeDiff":
            customize = _named_or_inline(value, scope)
        if dotted(key) == "DeprecationMessage":
            deprecation = evaluate(value, scope)
    # Replacement decided at plan time (CustomizeDiff): diff.ForceNew("x"), customdiff.ForceNewIf("x", ...).
    forced = [{"field": m.group(2), "how": m.group(1), "at": f"{file.path}:{file.line_of(m.start())}"}
              for m in re.finditer(r'\.(ForceNew|ForceNewIf|ForceNewIfChange)\("([a-z0-9_.]+)"', file.text)]
    return ResourceSchema(file.path, file.line_of(brace), block_facts(literal, scope), customize, forced, deprecation)
