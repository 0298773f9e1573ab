#!/usr/bin/env python3
"""CPython's answer for pickles, for the differential test of the safe pickle reader
(formats/pickle_reader_cpython_test.cc): one long-lived process that reads pickles from stdin and
writes, for each, what Python's own unpickler (the C `pickle.Unpickler` that pickle.load and
torch.load run) builds, as the canonical text of formats/pickle_dump.h, or the error it raises.

Messages, both ways: a 4-byte little-endian length, then that many bytes. The first message in is
the whitelist (JSON: [{"module", "name", "role", "fields", "extra"}], as pickle_globals.h has it,
and "tensor_fields"); then each message in is a pickle, and each message out is "ok\n" and the
text, "error\n" and the exception, or "resource\n" and the exception for a MemoryError or
RecursionError (this process may take at most 4 GiB of address space, so that a memo key of
billions fails here as it would on a small machine).

Why stand-ins and not torch: Unpickler.find_class below allows exactly the whitelist, and returns
for each entry an object of this script that behaves as the reader's whitelist says that global
behaves (GlobalRole in pickle_globals.h): what REDUCE, NEWOBJ, NEWOBJ_EX and BUILD do with it,
which values it builds. The unpickler itself - the stack, MARK, the memo, frames, every opcode,
and the dicts, sets, tuples, lists, str and bytes it builds, their equality and hashing - is
CPython's own, which is what this test compares the reader with; importing torch (seconds) would
only replace the stand-ins by the real classes, whose behaviour the reader does not claim beyond
its whitelist's roles. The stand-ins follow CPython's protocol as the real classes meet it: a
class global is a type (NEWOBJ takes it; BUILD on the class itself finds no __setstate__, as on
a dataclass), a function global is a callable that is not a type and has no __dict__, a dtype is
neither callable nor a type, and an object has no __dict__, so that BUILD reaches its
__setstate__ only.
"""
import io
import json
import pickle
import resource
import struct
import sys

MAX_DEPTH = 64  # as formats/pickle_dump.cc
MAX_TEXT = 1 << 20
MAX_ORDERING_TEXT = 4096
MAX_VISITS = 1 << 20


class Refused(pickle.UnpicklingError):
    pass


class InstanceOnly:
    """A method found on instances only: the class itself has no such attribute."""

    def __init__(self, function):
        self.function = function

    def __get__(self, obj, objtype=None):
        if obj is None:
            raise AttributeError(self.function.__name__)
        return self.function.__get__(obj, objtype)


class Sealed(type):
    """The stand-in classes: their attributes cannot be set (BUILD's slot state on a class)."""

    def __setattr__(cls, name, value):
        raise AttributeError(f"{cls.__qualname__} is read-only")


class Obj(metaclass=Sealed):
    """An object of a whitelisted class: its declared fields and its extra attributes."""

    __slots__ = ("values", "extras")
    fields = ()
    extra = False
    role = "dataclass"
    global_name = ""

    def __new__(cls, *args, **kwargs):
        if cls.role == "enum":
            if kwargs:
                raise Refused("keyword arguments to an enum")
            if len(args) != 1:
                raise Refused("an enum takes 1 argument")
        self = object.__new__(cls)
        self.values = [None] * len(cls.fields)
        self.extras = {}
        set_positional(self, args)
        for name, value in kwargs.items():
            set_attribute(self, name, value)
        return self

    def __init__(self, *args, **kwargs):
        pass

    @InstanceOnly
    def __setstate__(self, state):
        if type(state) is dict:
            set_from_dict(self, state)
        elif type(state) is tuple and type(self).role == "state_tuple":
            set_positional(self, state)
        elif type(state) is tuple and len(state) == 2:
            for part in state:
                if type(part) is dict:
                    set_from_dict(self, part)
                elif part is not None:
                    raise Refused("a part of BUILD's state must be dict or None")
        elif state is not None:
            raise Refused("BUILD's state must be dict")


def set_positional(obj, args):
    if len(args) > len(obj.fields):
        raise Refused(f"{obj.global_name} takes {len(obj.fields)} fields")
    for i, value in enumerate(args):
        obj.values[i] = value


def set_attribute(obj, name, value):
    if type(name) is not str:
        raise Refused("an attribute name must be str")
    if name in obj.fields:
        obj.values[obj.fields.index(name)] = value
    elif obj.extra:
        obj.extras[name] = value
    else:
        raise Refused(f"{obj.global_name} has no attribute {name!r}")


def set_from_dict(obj, state):
    for name, value in state.items():
        set_attribute(obj, name, value)


class Function:
    """A function of the whitelist: callable, not a type, no __dict__."""

    __slots__ = ("impl", "global_name")

    def __init__(self, impl, global_name):
        self.impl = impl
        self.global_name = global_name

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise Refused("keyword arguments to a function")
        return self.impl(*args)


class DType:
    """A torch dtype: neither callable nor a type."""

    __slots__ = ("global_name",)

    def __init__(self, global_name):
        self.global_name = global_name


class PersistentId:
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


def no_keywords(kwargs, what):
    if kwargs:
        raise Refused(f"keyword arguments to {what}")


def torch_size(cls, *args, **kwargs):
    no_keywords(kwargs, "torch.Size")
    if len(args) != 1 or type(args[0]) not in (tuple, list):
        raise Refused("torch.Size takes one tuple of ints")
    if any(type(d) is not int for d in args[0]):
        raise Refused("a torch.Size dimension must be int")
    return args[0] if type(args[0]) is tuple else tuple(args[0])


def ordered_dict(cls, *args, **kwargs):
    no_keywords(kwargs, "OrderedDict")
    if args:
        raise Refused("OrderedDict takes 0 arguments")
    return {}


def path(cls, *parts, **kwargs):
    no_keywords(kwargs, "a path")
    joined = ""
    for part in parts:
        if type(part) is not str:
            raise Refused("a path part must be str")
        if joined and not joined.endswith("/"):
            joined += "/"
        joined += part
    return joined


def not_callable(cls, *args, **kwargs):
    raise Refused(f"{cls.global_name} is not callable here")


def layout(*args):
    if len(args) != 1 or type(args[0]) is not str:
        raise Refused("_get_layout takes one str")
    return args[0]


def rebuild_parameter(*args):
    if not args:
        raise Refused("_rebuild_parameter takes at least 1 argument")
    return args[0]


def build_globals(whitelist):
    """(module, name) -> the stand-in for each whitelisted global."""
    found = {}
    tensor = type("Tensor", (Obj,), {"__slots__": (), "fields": tuple(whitelist["tensor_fields"]),
                                     "extra": False, "role": "dataclass",
                                     "global_name": "torch.Tensor"})

    def rebuild_tensor(v3):
        def impl(*args):
            if len(args) not in (6, 7):
                raise Refused("_rebuild_tensor takes 6 or 7 arguments")
            return Obj.__new__(tensor, *(args if v3 else args[:6]))
        return impl

    def getattr_(enum_members):
        def impl(*args):
            if len(args) != 2:
                raise Refused("getattr takes 2 arguments")
            owner, name = args
            if not (isinstance(owner, Sealed) and getattr(owner, "role", "") == "enum" and
                    type(name) is str):
                raise Refused("getattr is allowed only for an enum member")
            return Obj.__new__(owner, name)
        return impl

    class_roles = {"torch_size": torch_size, "ordered_dict": ordered_dict, "path": path,
                   "storage_class": not_callable}
    for g in whitelist["globals"]:
        module, name, role = g["module"], g["name"], g["role"]
        global_name = f"{module}.{name}"
        if role in ("dataclass", "state_tuple", "enum"):
            stand_in = Sealed(name, (Obj,), {"__slots__": (), "fields": tuple(g["fields"]),
                                             "extra": g["extra"], "role": role,
                                             "global_name": global_name})
        elif role in class_roles:
            stand_in = Sealed(name, (), {"__new__": class_roles[role], "global_name": global_name,
                                         "role": role})
        elif role == "dtype":
            stand_in = DType(global_name)
        elif role == "layout":
            stand_in = Function(layout, global_name)
        elif role == "getattr":
            stand_in = Function(getattr_(None), global_name)
        elif role == "rebuild_tensor":
            stand_in = Function(rebuild_tensor(name == "_rebuild_tensor_v3"), global_name)
        elif role == "rebuild_parameter":
            stand_in = Function(rebuild_parameter, global_name)
        else:
            raise SystemExit(f"unknown role {role!r} for {global_name}")
        found[(module, name)] = stand_in
    return found


class WhitelistUnpickler(pickle.Unpickler):
    def __init__(self, data, globals_):
        super().__init__(io.BytesIO(data))
        self.globals_ = globals_

    def find_class(self, module, name):
        stand_in = self.globals_.get((module, name))
        if stand_in is None:
            raise Refused(f"global '{module}.{name}' is not allowed")
        return stand_in

    def persistent_load(self, pid):
        return PersistentId(pid)


# ---- the canonical text (formats/pickle_dump.h)

def escape(data):
    out = []
    for b in data:
        if 0x20 <= b < 0x7f and b not in (0x27, 0x5c):
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def has_identity(v):
    if isinstance(v, Obj):
        return v.role != "enum"
    return type(v) in (list, dict, set, bytearray, PersistentId)


def is_global(v):
    return isinstance(v, (Sealed, Function, DType))


class Dumper:
    def __init__(self, labels):
        self.labels = labels
        self.seen = {}
        self.label_of = {}
        self.visits = 0
        self.size = 0  # of the text so far

    def dump(self, root):
        if self.labels:
            self.count(root, 0)
        out = []
        self.print(root, 0, out)
        return "".join(out)

    def children(self, v):
        if type(v) in (tuple, list):
            return list(v)
        if type(v) is dict:
            return [x for kv in v.items() for x in kv]
        if type(v) in (set, frozenset):
            keyed = [(Dumper(False).dump(e), i, e) for i, e in enumerate(v)]
            keyed.sort(key=lambda k: (k[0], k[1]))
            return [e for _, _, e in keyed]
        if isinstance(v, Obj) and not is_global(v):
            return list(v.values) + [x for kv in v.extras.items() for x in kv]
        if type(v) is PersistentId:
            return [v.pid]
        return []

    def put(self, out, text):
        out.append(text)
        self.size += len(text)

    def count(self, v, depth):
        self.visits += 1
        if self.visits > MAX_VISITS or depth > MAX_DEPTH:
            return
        if has_identity(v):
            self.seen[id(v)] = self.seen.get(id(v), 0) + 1
            if self.seen[id(v)] > 1:
                return
        for child in self.children(v):
            self.count(child, depth + 1)

    def print(self, v, depth, out):
        if self.size > (MAX_TEXT if self.labels else MAX_ORDERING_TEXT):
            return
        if depth > MAX_DEPTH:
            self.put(out, "...")
            return
        if self.labels and has_identity(v) and self.seen.get(id(v), 0) > 1:
            first = id(v) not in self.label_of
            if first:
                self.label_of[id(v)] = len(self.label_of) + 1
            self.put(out, "#%d" % self.label_of[id(v)])
            if not first:
                return
            self.put(out, "=")
        children = self.children(v)

        def seq(open_, close):
            self.put(out, open_)
            for i, c in enumerate(children):
                if i:
                    self.put(out, ", ")
                self.print(c, depth + 1, out)
            self.put(out, close)

        t = type(v)
        if v is None:
            self.put(out, "None")
        elif t is bool:
            self.put(out, "True" if v else "False")
        elif t is int:
            self.put(out, str(v))
        elif t is float:
            self.put(out, "float:%016x" % struct.unpack("<Q", struct.pack("<d", v))[0])
        elif t is str:
            self.put(out, "'" + escape(v.encode("utf-8", "surrogatepass")) + "'")
        elif t is bytes:
            self.put(out, "b'" + escape(v) + "'")
        elif t is bytearray:
            self.put(out, "bytearray(b'" + escape(v) + "')")
        elif t is tuple:
            seq("(", ",)" if len(children) == 1 else ")")
        elif t is list:
            seq("[", "]")
        elif t is set:
            seq("{" if children else "set(", "}" if children else ")")
        elif t is frozenset:
            seq("frozenset({" if children else "frozenset(", "})" if children else ")")
        elif t is dict:
            self.put(out, "{")
            for i in range(0, len(children), 2):
                if i:
                    self.put(out, ", ")
                self.print(children[i], depth + 1, out)
                self.put(out, ": ")
                self.print(children[i + 1], depth + 1, out)
            self.put(out, "}")
        elif is_global(v):
            self.put(out, "global:" + v.global_name)
        elif isinstance(v, Obj):
            self.put(out, v.global_name + "(")
            fields = len(v.fields)
            i = 0
            while i < len(children):
                if i:
                    self.put(out, ", ")
                if i < fields:
                    self.put(out, v.fields[i] + "=")
                    self.print(children[i], depth + 1, out)
                else:
                    self.print(children[i], depth + 1, out)
                    self.put(out, "=")
                    self.print(children[i + 1], depth + 1, out)
                    i += 1
                i += 1
            self.put(out, ")")
        elif t is PersistentId:
            seq("persid(", ")")
        else:
            self.put(out, f"<unexpected {t.__name__}>")


def answer(data, globals_):
    try:
        value = WhitelistUnpickler(data, globals_).load()
        return "ok\n" + Dumper(True).dump(value)
    except (MemoryError, RecursionError) as e:
        return f"resource\n{type(e).__name__}: {e}"
    except Exception as e:  # every refusal, whatever Python raises
        return f"error\n{type(e).__name__}: {e}"


def read_message(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (size,) = struct.unpack("<I", header)
    return stream.read(size)


def main():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    globals_ = build_globals(json.loads(read_message(stdin)))
    while True:
        data = read_message(stdin)
        if data is None:
            return
        reply = answer(data, globals_).encode("utf-8", "backslashreplace")
        stdout.write(struct.pack("<I", len(reply)) + reply)
        stdout.flush()


if __name__ == "__main__":
    main()
