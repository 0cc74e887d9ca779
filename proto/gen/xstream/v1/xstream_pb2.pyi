from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Acks(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACKS_LEADER: _ClassVar[Acks]
    ACKS_QUORUM: _ClassVar[Acks]
    ACKS_ALL: _ClassVar[Acks]
ACKS_LEADER: Acks
ACKS_QUORUM: Acks
ACKS_ALL: Acks

class Value(_message.Message):
    __slots__ = ("bulk", "integer", "status", "null", "null_array", "array", "map", "pair_map", "entries")
    BULK_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NULL_FIELD_NUMBER: _ClassVar[int]
    NULL_ARRAY_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    PAIR_MAP_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    bulk: bytes
    integer: int
    status: str
    null: Null
    null_array: Null
    array: Array
    map: Map
    pair_map: Map
    entries: Entries
    def __init__(self, bulk: _Optional[bytes] = ..., integer: _Optional[int] = ..., status: _Optional[str] = ..., null: _Optional[_Union[Null, _Mapping]] = ..., null_array: _Optional[_Union[Null, _Mapping]] = ..., array: _Optional[_Union[Array, _Mapping]] = ..., map: _Optional[_Union[Map, _Mapping]] = ..., pair_map: _Optional[_Union[Map, _Mapping]] = ..., entries: _Optional[_Union[Entries, _Mapping]] = ...) -> None: ...

class Entries(_message.Message):
    __slots__ = ("ids", "counts", "elements")
    IDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[bytes]
    counts: _containers.RepeatedScalarFieldContainer[int]
    elements: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, ids: _Optional[_Iterable[bytes]] = ..., counts: _Optional[_Iterable[int]] = ..., elements: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Null(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Array(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, items: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...

class Map(_message.Message):
    __slots__ = ("keys", "values")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    values: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, keys: _Optional[_Iterable[bytes]] = ..., values: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...

class Reply(_message.Message):
    __slots__ = ("value", "error", "offset")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    value: Value
    error: str
    offset: int
    def __init__(self, value: _Optional[_Union[Value, _Mapping]] = ..., error: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class WriteConcern(_message.Message):
    __slots__ = ("acks", "timeout_ms")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    acks: Acks
    timeout_ms: int
    def __init__(self, acks: _Optional[_Union[Acks, str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("argv", "concern")
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[bytes]
    concern: WriteConcern
    def __init__(self, argv: _Optional[_Iterable[bytes]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class PipelineRequest(_message.Message):
    __slots__ = ("commands", "concern")
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    concern: WriteConcern
    def __init__(self, commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class PipelineReply(_message.Message):
    __slots__ = ("replies", "offset")
    REPLIES_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    replies: _containers.RepeatedCompositeFieldContainer[Reply]
    offset: int
    def __init__(self, replies: _Optional[_Iterable[_Union[Reply, _Mapping]]] = ..., offset: _Optional[int] = ...) -> None: ...

class IngestBatch(_message.Message):
    __slots__ = ("key", "counts", "elements", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    counts: _containers.RepeatedScalarFieldContainer[int]
    elements: _containers.RepeatedScalarFieldContainer[bytes]
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., counts: _Optional[_Iterable[int]] = ..., elements: _Optional[_Iterable[bytes]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class IngestReply(_message.Message):
    __slots__ = ("entries", "batches", "first_ids", "last_ids", "offset", "error")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    FIRST_IDS_FIELD_NUMBER: _ClassVar[int]
    LAST_IDS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    entries: int
    batches: int
    first_ids: _containers.RepeatedScalarFieldContainer[str]
    last_ids: _containers.RepeatedScalarFieldContainer[str]
    offset: int
    error: str
    def __init__(self, entries: _Optional[int] = ..., batches: _Optional[int] = ..., first_ids: _Optional[_Iterable[str]] = ..., last_ids: _Optional[_Iterable[str]] = ..., offset: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class Field(_message.Message):
    __slots__ = ("field", "value")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    field: bytes
    value: bytes
    def __init__(self, field: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...

class Trim(_message.Message):
    __slots__ = ("strategy", "approximate", "threshold", "limit")
    class Strategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MAXLEN: _ClassVar[Trim.Strategy]
        MINID: _ClassVar[Trim.Strategy]
    MAXLEN: Trim.Strategy
    MINID: Trim.Strategy
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    APPROXIMATE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    strategy: Trim.Strategy
    approximate: bool
    threshold: str
    limit: int
    def __init__(self, strategy: _Optional[_Union[Trim.Strategy, str]] = ..., approximate: _Optional[bool] = ..., threshold: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class XAddRequest(_message.Message):
    __slots__ = ("key", "id", "fields", "nomkstream", "trim", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    NOMKSTREAM_FIELD_NUMBER: _ClassVar[int]
    TRIM_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    id: str
    fields: _containers.RepeatedCompositeFieldContainer[Field]
    nomkstream: bool
    trim: Trim
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., id: _Optional[str] = ..., fields: _Optional[_Iterable[_Union[Field, _Mapping]]] = ..., nomkstream: _Optional[bool] = ..., trim: _Optional[_Union[Trim, _Mapping]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XAddReply(_message.Message):
    __slots__ = ("id", "offset")
    ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    id: str
    offset: int
    def __init__(self, id: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("id", "fields")
    ID_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    fields: _containers.RepeatedCompositeFieldContainer[Field]
    def __init__(self, id: _Optional[str] = ..., fields: _Optional[_Iterable[_Union[Field, _Mapping]]] = ...) -> None: ...

class XRangeRequest(_message.Message):
    __slots__ = ("key", "start", "end", "count", "reverse")
    KEY_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    start: str
    end: str
    count: int
    reverse: bool
    def __init__(self, key: _Optional[bytes] = ..., start: _Optional[str] = ..., end: _Optional[str] = ..., count: _Optional[int] = ..., reverse: _Optional[bool] = ...) -> None: ...

class EntriesReply(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class StreamOffset(_message.Message):
    __slots__ = ("key", "id")
    KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    id: str
    def __init__(self, key: _Optional[bytes] = ..., id: _Optional[str] = ...) -> None: ...

class XReadRequest(_message.Message):
    __slots__ = ("streams", "count", "block_ms")
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    BLOCK_MS_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[StreamOffset]
    count: int
    block_ms: int
    def __init__(self, streams: _Optional[_Iterable[_Union[StreamOffset, _Mapping]]] = ..., count: _Optional[int] = ..., block_ms: _Optional[int] = ...) -> None: ...

class XReadGroupRequest(_message.Message):
    __slots__ = ("group", "consumer", "streams", "count", "block_ms", "noack", "concern")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    BLOCK_MS_FIELD_NUMBER: _ClassVar[int]
    NOACK_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    group: bytes
    consumer: bytes
    streams: _containers.RepeatedCompositeFieldContainer[StreamOffset]
    count: int
    block_ms: int
    noack: bool
    concern: WriteConcern
    def __init__(self, group: _Optional[bytes] = ..., consumer: _Optional[bytes] = ..., streams: _Optional[_Iterable[_Union[StreamOffset, _Mapping]]] = ..., count: _Optional[int] = ..., block_ms: _Optional[int] = ..., noack: _Optional[bool] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class StreamEntries(_message.Message):
    __slots__ = ("key", "entries")
    KEY_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, key: _Optional[bytes] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class StreamsReply(_message.Message):
    __slots__ = ("streams", "offset")
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[StreamEntries]
    offset: int
    def __init__(self, streams: _Optional[_Iterable[_Union[StreamEntries, _Mapping]]] = ..., offset: _Optional[int] = ...) -> None: ...

class KeyRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    def __init__(self, key: _Optional[bytes] = ...) -> None: ...

class CountReply(_message.Message):
    __slots__ = ("count", "offset")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    count: int
    offset: int
    def __init__(self, count: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class XDelRequest(_message.Message):
    __slots__ = ("key", "ids", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    ids: _containers.RepeatedScalarFieldContainer[str]
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., ids: _Optional[_Iterable[str]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XTrimRequest(_message.Message):
    __slots__ = ("key", "trim", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TRIM_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    trim: Trim
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., trim: _Optional[_Union[Trim, _Mapping]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XAckRequest(_message.Message):
    __slots__ = ("key", "group", "ids", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    group: bytes
    ids: _containers.RepeatedScalarFieldContainer[str]
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., ids: _Optional[_Iterable[str]] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XGroupRequest(_message.Message):
    __slots__ = ("op", "key", "group", "id", "consumer", "mkstream", "entries_read", "concern")
    class Op(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CREATE: _ClassVar[XGroupRequest.Op]
        SETID: _ClassVar[XGroupRequest.Op]
        DESTROY: _ClassVar[XGroupRequest.Op]
        CREATECONSUMER: _ClassVar[XGroupRequest.Op]
        DELCONSUMER: _ClassVar[XGroupRequest.Op]
    CREATE: XGroupRequest.Op
    SETID: XGroupRequest.Op
    DESTROY: XGroupRequest.Op
    CREATECONSUMER: XGroupRequest.Op
    DELCONSUMER: XGroupRequest.Op
    OP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    MKSTREAM_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_READ_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    op: XGroupRequest.Op
    key: bytes
    group: bytes
    id: str
    consumer: bytes
    mkstream: bool
    entries_read: int
    concern: WriteConcern
    def __init__(self, op: _Optional[_Union[XGroupRequest.Op, str]] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., id: _Optional[str] = ..., consumer: _Optional[bytes] = ..., mkstream: _Optional[bool] = ..., entries_read: _Optional[int] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XPendingRequest(_message.Message):
    __slots__ = ("key", "group", "count", "start", "end", "consumer", "min_idle_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    MIN_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    group: bytes
    count: int
    start: str
    end: str
    consumer: bytes
    min_idle_ms: int
    def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., count: _Optional[int] = ..., start: _Optional[str] = ..., end: _Optional[str] = ..., consumer: _Optional[bytes] = ..., min_idle_ms: _Optional[int] = ...) -> None: ...

class XClaimRequest(_message.Message):
    __slots__ = ("key", "group", "consumer", "min_idle_ms", "ids", "idle_ms", "time_ms", "retry_count", "force", "justid", "last_id", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    MIN_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    JUSTID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    group: bytes
    consumer: bytes
    min_idle_ms: int
    ids: _containers.RepeatedScalarFieldContainer[str]
    idle_ms: int
    time_ms: int
    retry_count: int
    force: bool
    justid: bool
    last_id: str
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., consumer: _Optional[bytes] = ..., min_idle_ms: _Optional[int] = ..., ids: _Optional[_Iterable[str]] = ..., idle_ms: _Optional[int] = ..., time_ms: _Optional[int] = ..., retry_count: _Optional[int] = ..., force: _Optional[bool] = ..., justid: _Optional[bool] = ..., last_id: _Optional[str] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XAutoClaimRequest(_message.Message):
    __slots__ = ("key", "group", "consumer", "min_idle_ms", "start", "count", "justid", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    MIN_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    JUSTID_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    group: bytes
    consumer: bytes
    min_idle_ms: int
    start: str
    count: int
    justid: bool
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., consumer: _Optional[bytes] = ..., min_idle_ms: _Optional[int] = ..., start: _Optional[str] = ..., count: _Optional[int] = ..., justid: _Optional[bool] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class XInfoRequest(_message.Message):
    __slots__ = ("op", "key", "group", "full", "count")
    class Op(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STREAM: _ClassVar[XInfoRequest.Op]
        GROUPS: _ClassVar[XInfoRequest.Op]
        CONSUMERS: _ClassVar[XInfoRequest.Op]
    STREAM: XInfoRequest.Op
    GROUPS: XInfoRequest.Op
    CONSUMERS: XInfoRequest.Op
    OP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    op: XInfoRequest.Op
    key: bytes
    group: bytes
    full: bool
    count: int
    def __init__(self, op: _Optional[_Union[XInfoRequest.Op, str]] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., full: _Optional[bool] = ..., count: _Optional[int] = ...) -> None: ...

class XSetIdRequest(_message.Message):
    __slots__ = ("key", "last_id", "entries_added", "max_deleted_id", "concern")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_ADDED_FIELD_NUMBER: _ClassVar[int]
    MAX_DELETED_ID_FIELD_NUMBER: _ClassVar[int]
    CONCERN_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    last_id: str
    entries_added: int
    max_deleted_id: str
    concern: WriteConcern
    def __init__(self, key: _Optional[bytes] = ..., last_id: _Optional[str] = ..., entries_added: _Optional[int] = ..., max_deleted_id: _Optional[str] = ..., concern: _Optional[_Union[WriteConcern, _Mapping]] = ...) -> None: ...

class EpochEntry(_message.Message):
    __slots__ = ("epoch", "start")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    start: int
    def __init__(self, epoch: _Optional[int] = ..., start: _Optional[int] = ...) -> None: ...

class ReplicaMessage(_message.Message):
    __slots__ = ("hello", "ack")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    ack: Ack
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("replid", "offset", "name", "address", "epoch", "history", "log_start")
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    LOG_START_FIELD_NUMBER: _ClassVar[int]
    replid: str
    offset: int
    name: str
    address: str
    epoch: int
    history: _containers.RepeatedCompositeFieldContainer[EpochEntry]
    log_start: int
    def __init__(self, replid: _Optional[str] = ..., offset: _Optional[int] = ..., name: _Optional[str] = ..., address: _Optional[str] = ..., epoch: _Optional[int] = ..., history: _Optional[_Iterable[_Union[EpochEntry, _Mapping]]] = ..., log_start: _Optional[int] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("offset", "lag_ms")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_MS_FIELD_NUMBER: _ClassVar[int]
    offset: int
    lag_ms: int
    def __init__(self, offset: _Optional[int] = ..., lag_ms: _Optional[int] = ...) -> None: ...

class PrimaryMessage(_message.Message):
    __slots__ = ("resume", "full_sync", "chunk", "snapshot_end", "records", "ping")
    RESUME_FIELD_NUMBER: _ClassVar[int]
    FULL_SYNC_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_END_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    resume: Continue
    full_sync: FullSync
    chunk: SnapshotChunk
    snapshot_end: SnapshotEnd
    records: Records
    ping: Ping
    def __init__(self, resume: _Optional[_Union[Continue, _Mapping]] = ..., full_sync: _Optional[_Union[FullSync, _Mapping]] = ..., chunk: _Optional[_Union[SnapshotChunk, _Mapping]] = ..., snapshot_end: _Optional[_Union[SnapshotEnd, _Mapping]] = ..., records: _Optional[_Union[Records, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ...) -> None: ...

class Continue(_message.Message):
    __slots__ = ("replid", "offset", "epoch", "history")
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    replid: str
    offset: int
    epoch: int
    history: _containers.RepeatedCompositeFieldContainer[EpochEntry]
    def __init__(self, replid: _Optional[str] = ..., offset: _Optional[int] = ..., epoch: _Optional[int] = ..., history: _Optional[_Iterable[_Union[EpochEntry, _Mapping]]] = ...) -> None: ...

class FullSync(_message.Message):
    __slots__ = ("replid", "offset", "size", "epoch", "history", "users")
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    replid: str
    offset: int
    size: int
    epoch: int
    history: _containers.RepeatedCompositeFieldContainer[EpochEntry]
    users: bytes
    def __init__(self, replid: _Optional[str] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., epoch: _Optional[int] = ..., history: _Optional[_Iterable[_Union[EpochEntry, _Mapping]]] = ..., users: _Optional[bytes] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class SnapshotEnd(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Records(_message.Message):
    __slots__ = ("start", "data", "time_ms", "primary_offset", "ack_now", "epoch")
    START_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ACK_NOW_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    start: int
    data: bytes
    time_ms: int
    primary_offset: int
    ack_now: bool
    epoch: int
    def __init__(self, start: _Optional[int] = ..., data: _Optional[bytes] = ..., time_ms: _Optional[int] = ..., primary_offset: _Optional[int] = ..., ack_now: _Optional[bool] = ..., epoch: _Optional[int] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ("primary_offset", "time_ms", "ack_now", "epoch")
    PRIMARY_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ACK_NOW_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    primary_offset: int
    time_ms: int
    ack_now: bool
    epoch: int
    def __init__(self, primary_offset: _Optional[int] = ..., time_ms: _Optional[int] = ..., ack_now: _Optional[bool] = ..., epoch: _Optional[int] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReplicaInfo(_message.Message):
    __slots__ = ("name", "address", "ack_offset", "lag_offset", "lag_ms", "state")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ACK_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    ack_offset: int
    lag_offset: int
    lag_ms: int
    state: str
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., ack_offset: _Optional[int] = ..., lag_offset: _Optional[int] = ..., lag_ms: _Optional[int] = ..., state: _Optional[str] = ...) -> None: ...

class InfoReply(_message.Message):
    __slots__ = ("role", "replid", "offset", "primary", "link", "lag_offset", "lag_ms", "replicas", "keys", "digest", "full_syncs", "partial_syncs", "backlog_start", "snapshot_offset", "fsync", "name", "apply_lag_p50_ms", "apply_lag_p99_ms", "blocked_clients", "epoch", "leader_epoch", "deposed", "replid2", "replid2_end", "history")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    LAG_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAG_MS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    FULL_SYNCS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_SYNCS_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_START_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FSYNC_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    APPLY_LAG_P50_MS_FIELD_NUMBER: _ClassVar[int]
    APPLY_LAG_P99_MS_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_CLIENTS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DEPOSED_FIELD_NUMBER: _ClassVar[int]
    REPLID2_FIELD_NUMBER: _ClassVar[int]
    REPLID2_END_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    role: str
    replid: str
    offset: int
    primary: str
    link: str
    lag_offset: int
    lag_ms: int
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    keys: int
    digest: str
    full_syncs: int
    partial_syncs: int
    backlog_start: int
    snapshot_offset: int
    fsync: str
    name: str
    apply_lag_p50_ms: float
    apply_lag_p99_ms: float
    blocked_clients: int
    epoch: int
    leader_epoch: int
    deposed: bool
    replid2: str
    replid2_end: int
    history: _containers.RepeatedCompositeFieldContainer[EpochEntry]
    def __init__(self, role: _Optional[str] = ..., replid: _Optional[str] = ..., offset: _Optional[int] = ..., primary: _Optional[str] = ..., link: _Optional[str] = ..., lag_offset: _Optional[int] = ..., lag_ms: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ..., keys: _Optional[int] = ..., digest: _Optional[str] = ..., full_syncs: _Optional[int] = ..., partial_syncs: _Optional[int] = ..., backlog_start: _Optional[int] = ..., snapshot_offset: _Optional[int] = ..., fsync: _Optional[str] = ..., name: _Optional[str] = ..., apply_lag_p50_ms: _Optional[float] = ..., apply_lag_p99_ms: _Optional[float] = ..., blocked_clients: _Optional[int] = ..., epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., deposed: _Optional[bool] = ..., replid2: _Optional[str] = ..., replid2_end: _Optional[int] = ..., history: _Optional[_Iterable[_Union[EpochEntry, _Mapping]]] = ...) -> None: ...

class WaitRequest(_message.Message):
    __slots__ = ("numreplicas", "timeout_ms", "offset")
    NUMREPLICAS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    numreplicas: int
    timeout_ms: int
    offset: int
    def __init__(self, numreplicas: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class WaitReply(_message.Message):
    __slots__ = ("replicas",)
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    def __init__(self, replicas: _Optional[int] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SnapshotReply(_message.Message):
    __slots__ = ("offset", "bytes")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    offset: int
    bytes: int
    def __init__(self, offset: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class DigestRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DigestReply(_message.Message):
    __slots__ = ("digest", "offset")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    digest: str
    offset: int
    def __init__(self, digest: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class PromoteRequest(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class PromoteReply(_message.Message):
    __slots__ = ("epoch", "replid", "offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    replid: str
    offset: int
    def __init__(self, epoch: _Optional[int] = ..., replid: _Optional[str] = ..., offset: _Optional[int] = ...) -> None: ...

class ReplicaOfRequest(_message.Message):
    __slots__ = ("primary", "epoch")
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    primary: str
    epoch: int
    def __init__(self, primary: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class ReplicaOfReply(_message.Message):
    __slots__ = ("role", "offset", "epoch")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    role: str
    offset: int
    epoch: int
    def __init__(self, role: _Optional[str] = ..., offset: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...
