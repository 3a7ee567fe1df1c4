"""Protobuf message classes from a small table of fields: the one way advisor declares the binary
schemas of the dump files it reads (ascend_proto.py, tfdbg.py) without generated ``_pb2`` modules.

Only the fields a reader needs are declared, with the numbers and types the formats publish; the
protobuf runtime skips every other field of a message, so a newer writer's additions do not break
the reader.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELD = descriptor_pb2.FieldDescriptorProto
#: (field name, number, FIELD.TYPE_..., FIELD.LABEL_..., message type name or "")
Field = tuple[str, int, int, int, str]


def message_class(package: str, messages: tuple[tuple[str, tuple[Field, ...]], ...], root: str) -> type:
    """The class of message ``root`` among ``messages`` (name, fields), all in ``package``."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package.replace('.', '_')}.proto", package=package,
                                              syntax="proto3")
    for name, fields in messages:
        message = file.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            entry = message.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{root}"))
