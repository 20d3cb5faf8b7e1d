// fuzz_remote_receive.cc - libFuzzer target for what a remote channel's receiver does with a
// tensor that arrives from another machine (core/src/ipc/remote.cc, on_tensor): the UCX active
// message's header is a descriptor and its extension frame cut to the tensor's rank (wire.hpp,
// pack_remote) and its data the tensor's bytes. The peer may send anything, so whatever arrives
// must be refused with a message and one of the statuses a refusal documents, or give a tensor
// of exactly the bytes that came, no more than the receiver allows.
//
// The transport needs UCX and a peer; the checks and what follows them do not. This target runs
// the same steps on bytes from the input: dlb::ipc::check_remote (the head, the rank and the
// header's size, then the descriptor), then what on_tensor does with an accepted descriptor
// (allocate the receiver's cpu tensor, compact or of the sender's strides, copy the bytes into
// its span). The tensor is then read whole with dlb_tensor_copy_to_host and compared with the
// bytes that came, read by the descriptor's layout. A lone tensor may say that its bytes follow in
// parts (RemoteExtension::in_parts): then fewer than its payload came with it, and the rest, as
// take_part would copy it, continues the input's bytes.
//
// A batch (DLB_SEND_MORE: several tensors in one message, wire.hpp BatchHeader) is split by
// dlb::ipc::check_batch and next_batch_record, as remote.cc's take_batch splits it; each record
// must lie within the batch, and each goes through the steps above with exactly its own bytes.
//
// Input:
//   byte 0      bit 1 set: a batch, laid out as below; clear: one tensor, as after it
//               bit 0 clear: the header is as long as the rank in its head says (the fixed head
//               alone for a rank outside 0..64); set: a u16 follows with the header's size
//               (truncated, or longer than its rank's), zero-filled past the input's end
//   u64         the receiver's maximum tensor size (dlb_channel_options_set_max_tensor_bytes;
//               0 stands for 1, the least the option takes)
// one tensor:
//   u32         the payload's length (modulo kMaxPayload + 1)
//   header      the header's bytes
//   rest        the payload's bytes, repeated to the payload's length (zeros when nothing is left)
// a batch:
//   16 bytes    the batch's header (a BatchHeader, or anything)
//   rest        the batch's data: records (a BatchRecord, a header, a payload) or anything
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../core/src/ipc/ipc.hpp"
#include "fuzz_common.h"

namespace {

// Large enough for a few MiB tensors of every dtype, small enough to keep runs fast.
constexpr uint32_t kMaxPayload = 4u << 20;
constexpr uint64_t kMaxReadBack = uint64_t{16} << 20;
// Sub-byte elements are copied one at a time: 2^25 packed int4 elements (16 MiB) took 8 s under
// ASan and the fuzzer's instrumentation, and 1-bit ones four times as many, past the 25 s a unit
// may take. Read back at most this many elements.
constexpr int64_t kMaxReadBackElements = int64_t{1} << 22;
constexpr const char* kPeer = "the fuzzed peer";

bool documented_refusal(int status) {
  return status == DLB_ERR_PROTOCOL || status == DLB_ERR_LIMIT ||
         status == DLB_ERR_UNSUPPORTED_VERSION;
}

// remote.cc's check_arrival, up to the channel's own state (the count of tensors in flight):
// the codec's checks, from the header's size on.
int check_arrival(const uint8_t* header, size_t header_size, uint64_t arrived, bool lone,
                  uint64_t max_tensor_bytes, dlb::ipc::Wire* wire,
                  dlb::ipc::RemoteExtension* extension, dlb_error* error) {
  bool placed = false;
  return dlb::ipc::check_remote(header, header_size, arrived, lone, max_tensor_bytes, kPeer, wire,
                                extension, &placed, error);
}

// Whether `a` and `b`, `size` bytes of the descriptor's tensor in compact order, hold the same
// elements. Bits that belong to no element may differ: a copy writes elements only, so the high
// bits of a padded sub-byte element and the last byte's unused bits of a packed sub-byte tensor
// are not the receiver's to keep.
bool same_elements(const uint8_t* a, const uint8_t* b, uint64_t size, const dlb::ipc::Wire& wire) {
  const uint64_t element_bits = uint64_t{wire.bits} * wire.lanes;
  if (size == 0) return true;
  if (element_bits >= 8) return std::memcmp(a, b, size) == 0;
  if ((wire.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0) {
    const uint8_t mask = static_cast<uint8_t>((1u << element_bits) - 1);
    for (uint64_t i = 0; i < size; ++i) {
      if (((a[i] ^ b[i]) & mask) != 0) return false;
    }
    return true;
  }
  int64_t count = 1;
  for (int32_t d = 0; d < wire.ndim; ++d) count *= wire.shape[d];
  const uint64_t used_bits = static_cast<uint64_t>(count) * element_bits;
  const uint64_t whole = used_bits / 8;
  if (std::memcmp(a, b, whole) != 0) return false;
  if (used_bits % 8 == 0) return true;
  const uint8_t mask = static_cast<uint8_t>((1u << (used_bits % 8)) - 1);
  return ((a[whole] ^ b[whole]) & mask) == 0;
}

// What on_tensor does with one tensor's header and payload, `lone` or from a batch (the
// payload's bytes: `source`, repeated to `payload_size` bytes, zeros when it is empty, and on
// to the payload's end when the rest follows in parts).
void take_tensor(const uint8_t* header, size_t header_size, uint32_t payload_size, bool lone,
                 const uint8_t* source, size_t source_size, uint64_t max_tensor_bytes);

// What take_batch does with a batch: split it, each record within what came, each record's
// tensor taken with exactly its own bytes; a fault refused with DLB_ERR_PROTOCOL and a message.
void take_batch(fuzz::Reader& in, uint64_t max_tensor_bytes) {
  std::vector<uint8_t> header(sizeof(dlb::ipc::BatchHeader));
  for (size_t i = 0; i < header.size(); ++i) header[i] = in.u8();
  // Exactly the batch's bytes on the heap, so that a read past them is caught (ASan).
  const std::vector<uint8_t> batch(in.rest(), in.rest() + in.remaining());
  dlb_error err;
  fuzz::error_reset(&err);
  uint32_t count = 0;
  int status = dlb::ipc::check_batch(header.data(), header.size(), &count, &err);
  size_t offset = 0;
  for (uint32_t i = 0; status == DLB_OK && i < count; ++i) {
    dlb::ipc::BatchEntry entry{};
    const size_t before = offset;
    status = dlb::ipc::next_batch_record(batch.data(), batch.size(), &offset, i, &entry, &err);
    if (status != DLB_OK) break;
    FUZZ_CHECK(offset > before && offset <= batch.size());
    FUZZ_CHECK(entry.header >= batch.data() + before);
    FUZZ_CHECK(entry.payload + entry.payload_bytes == batch.data() + offset);
    FUZZ_CHECK(entry.header_bytes <= dlb::ipc::kMaxRemoteHeaderBytes);
    // The record's header and payload, copied to their own heap blocks of exactly their size.
    const std::vector<uint8_t> own_header(entry.header, entry.header + entry.header_bytes);
    const std::vector<uint8_t> own_payload(entry.payload, entry.payload + entry.payload_bytes);
    if (entry.payload_bytes <= kMaxPayload) {
      take_tensor(own_header.data(), own_header.size(),
                  static_cast<uint32_t>(entry.payload_bytes), false, own_payload.data(),
                  own_payload.size(), max_tensor_bytes);
    }
  }
  if (status != DLB_OK) {
    FUZZ_CHECK_MSG(status == DLB_ERR_PROTOCOL, status, err);
    FUZZ_CHECK_MSG(fuzz::error_filled(err), status, err);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const uint8_t mode = in.u8();
  const size_t given_size = (mode & 1) != 0 ? in.u16() : 0;
  uint64_t max_tensor_bytes = in.u64();
  if (max_tensor_bytes == 0) max_tensor_bytes = 1;
  if ((mode & 2) != 0) {
    take_batch(in, max_tensor_bytes);
    return 0;
  }
  const uint32_t payload_size = in.u32() % (kMaxPayload + 1);

  std::vector<uint8_t> head(dlb::ipc::kWireHeadBytes);
  for (auto& byte : head) byte = in.u8();
  size_t header_size = given_size;
  if ((mode & 1) == 0) {
    int32_t ndim = 0;
    std::memcpy(&ndim, head.data() + offsetof(dlb::ipc::Wire, ndim), sizeof ndim);
    header_size = ndim >= 0 && ndim <= DLB_MAX_NDIM ? dlb::ipc::remote_header_size(ndim)
                                                    : dlb::ipc::kWireHeadBytes;
  }
  // Exactly header_size bytes on the heap, so that a read past the header is caught (ASan).
  std::vector<uint8_t> header(header_size);
  for (size_t i = 0; i < header_size; ++i) header[i] = i < head.size() ? head[i] : in.u8();
  take_tensor(header.data(), header_size, payload_size, true, in.rest(), in.remaining(),
              max_tensor_bytes);
  return 0;
}

namespace {

void take_tensor(const uint8_t* header_bytes, size_t header_size, uint32_t arrived, bool lone,
                 const uint8_t* source, size_t source_size, uint64_t max_tensor_bytes) {
  const int64_t live_before = dlb_tensor_live_count();
  dlb::ipc::Wire wire;
  dlb::ipc::RemoteExtension extension;
  dlb_error err;
  fuzz::error_reset(&err);
  const int status = check_arrival(header_bytes, header_size, arrived, lone, max_tensor_bytes,
                                   &wire, &extension, &err);
  if (status != DLB_OK) {
    FUZZ_CHECK_MSG(documented_refusal(status), status, err);
    FUZZ_CHECK_MSG(fuzz::error_filled(err), status, err);
    FUZZ_CHECK(dlb_tensor_live_count() == live_before);
    return;
  }
  FUZZ_CHECK(fuzz::error_untouched(err));
  // Only a lone tensor's bytes follow in parts, and then not all of them came with it.
  FUZZ_CHECK(extension.in_parts == 0 || (lone && extension.in_parts == 1 &&
                                         arrived < extension.payload_bytes));
  FUZZ_CHECK(extension.in_parts == 1 || arrived == extension.payload_bytes);
  // Parts may bring more than a run should make (the receiver's maximum is the input's).
  if (extension.payload_bytes > kMaxPayload) return;
  const auto payload_size = static_cast<uint32_t>(extension.payload_bytes);

  // An accepted descriptor: its covering span, from the first byte (byte_offset places the
  // first element), is the payload, within the receiver's maximum.
  static char stand_in;
  DLTensor described = dlb::ipc::described_tensor(wire, &stand_in, wire.byte_offset);
  described.device = DLDevice{kDLCPU, 0};  // the receiver's host memory, as check_remote sees it
  dlb::Geometry g{};
  FUZZ_CHECK(dlb::validate_tensor(&described, wire.flags, &g, nullptr) == DLB_OK);
  const uint64_t span = (g.span_bits + 7) / 8;
  FUZZ_CHECK(g.span_bits == 0 || g.begin_bits == 0);
  FUZZ_CHECK(span == payload_size);
  FUZZ_CHECK(span == extension.payload_bytes);
  FUZZ_CHECK(span <= max_tensor_bytes);
  const bool keeps_strides = dlb::ipc::remote_keeps_strides(wire);

  // What on_tensor does next: the receiver's own tensor (compact, or of the sender's strides
  // when its span came), READ_ONLY and the flags that describe the bytes carried over,
  // IS_COPIED set, the bytes copied into its span.
  const uint64_t flags = wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY;
  const uint64_t carried = wire.flags & ~static_cast<uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY |
                                                               DLPACK_FLAG_BITMASK_IS_COPIED);
  DLManagedTensorVersioned* t = nullptr;
  const int allocated = dlb_tensor_allocate(
      DLDevice{kDLCPU, 0}, DLDataType{wire.code, wire.bits, wire.lanes}, wire.ndim, wire.shape,
      keeps_strides ? wire.strides : nullptr, flags | carried, &t, &err);
  // check_remote accepted the layout, so allocation may only fail for want of memory, which a
  // payload of at most kMaxPayload bytes never lacks here.
  FUZZ_CHECK_MSG(allocated == DLB_OK, allocated, err);
  t->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  dlb::Geometry got{};
  FUZZ_CHECK(dlb::validate_tensor(&t->dl_tensor, t->flags, &got, nullptr) == DLB_OK);
  FUZZ_CHECK((got.span_bits + 7) / 8 == payload_size);
  // A broadcast view's elements may take more bytes than 64 bits count (its span is what
  // was allocated): only a kept layout may say so.
  uint64_t compact = 0;
  const int sized = dlb_tensor_byte_size(&t->dl_tensor, t->flags, &compact, nullptr);
  FUZZ_CHECK(sized == DLB_OK || keeps_strides);
  if (sized != DLB_OK) compact = UINT64_MAX;
  FUZZ_CHECK(keeps_strides || compact == payload_size);
  // The bytes are made only now: the checks need their number alone, and most inputs stop there.
  std::vector<uint8_t> payload(payload_size > 0 ? payload_size : 1);
  for (size_t i = 0; i < payload_size && source_size > 0; ++i) {
    payload[i] = source[i % source_size];
  }
  if (payload_size > 0) {
    std::memcpy(static_cast<char*>(t->dl_tensor.data) + t->dl_tensor.byte_offset -
                    wire.byte_offset,
                payload.data(), payload_size);
  }

  // The tensor reads back element for element as the bytes that came: as they are when they
  // are compact, else as the descriptor's layout over them reads. A span of a few bytes may
  // be read as many elements (a broadcast view): those beyond kMaxReadBack bytes or
  // kMaxReadBackElements elements are not read.
  int64_t elements = 0;
  FUZZ_CHECK(dlb_tensor_element_count(&t->dl_tensor, &elements, nullptr) == DLB_OK);
  if (compact > kMaxReadBack || elements > kMaxReadBackElements) {
    dlb_tensor_free(t);
    FUZZ_CHECK(dlb_tensor_live_count() == live_before);
    return;
  }
  std::vector<uint8_t> back(compact > 0 ? compact : 1, 0xA5);
  const DLDataType as_is{0, 0, 0};
  const int copied = dlb_tensor_copy_to_host(t, as_is, back.data(), compact, &err);
  FUZZ_CHECK_MSG(copied == DLB_OK, copied, err);
  if (!keeps_strides) {
    FUZZ_CHECK(same_elements(back.data(), payload.data(), payload_size, wire));
  } else {
    DLManagedTensorVersioned sent{};
    sent.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    sent.dl_tensor = dlb::ipc::described_tensor(wire, payload.data(), wire.byte_offset);
    sent.dl_tensor.device = DLDevice{kDLCPU, 0};
    sent.flags = wire.flags & ~static_cast<uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY);
    std::vector<uint8_t> expected(back.size(), 0xA5);
    const int read = dlb_tensor_copy_to_host(&sent, as_is, expected.data(), compact, &err);
    FUZZ_CHECK_MSG(read == DLB_OK, read, err);
    FUZZ_CHECK(std::memcmp(back.data(), expected.data(), back.size()) == 0);
  }
  dlb_tensor_free(t);
  FUZZ_CHECK(dlb_tensor_live_count() == live_before);
}

}  // namespace
