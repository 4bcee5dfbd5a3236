"""Decoding of the sandbox's plain-data values in the trusted parent."""

from __future__ import annotations

from pairrl.rewards import sandbox_codec
from pairrl.rewards.sandbox_codec import decode, encode


class OpaqueValue:
    """A returned object that is not plain data: only its type name and truth value came back.

    It equals nothing but itself, so no test comparing it to an expected value passes;
    tests that only ask for truthiness (``assert is_match(s)``) still see the candidate's.
    """

    __slots__ = ("truthy", "type_name")

    def __init__(self, type_name: str, truthy: bool) -> None:
        self.type_name = type_name
        self.truthy = truthy

    def __bool__(self) -> bool:
        return self.truthy

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<opaque {self.type_name} truthy={self.truthy}>"


sandbox_codec.OPAQUE = OpaqueValue

__all__ = ["OpaqueValue", "decode", "encode"]
