/*
 * edgefirst/tensor.h — the EdgeFirst tensor library for C (libedgefirst_tensor, pkg-config
 * `edgefirst-tensor`).
 *
 * Tensors over the process heap, shared memory (memfd) or DMA-BUF (Linux DMA heaps), with a
 * declared CPU access, a buffer identity, zero-copy views, imports of foreign fds and images
 * (multi-plane NV12 with one fd per plane), CPU maps, and two ways to leave the process: the
 * tensor blob (reference mode: fds; inline mode: the bytes) and the fixed-size descriptor.
 *
 * Rules every function follows:
 *   - Handles (ef_tensor, ef_map) are values: a registry slot and its generation. A freed, stale
 *     or made-up handle is refused with a status (EF_STALE, EF_NOT_REGISTERED), never undefined
 *     behaviour. {0, 0} is never a live handle.
 *   - The return value is a status: EF_OK (0) on success, a positive EF_* code otherwise.
 *   - Outputs are written only on success; a failure leaves no partial state.
 *   - After a failure, ef_last_error() returns this thread's message (valid until this thread's
 *     next failing call).
 *   - fds passed in are borrowed (dup'd where kept); fds handed out (ef_tensor_clone_fd) are the
 *     caller's to close.
 *   - Thread-safe: handles may be used from any thread.
 */
#ifndef EDGEFIRST_TENSOR_H
#define EDGEFIRST_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
#define EF_OK 0
#define EF_INVALID 1        /* an argument or a field is malformed (NULL, code, shape, blob, descriptor) */
#define EF_NOT_REGISTERED 2 /* the handle's slot was never issued */
#define EF_STALE 3          /* the handle was freed (or its slot reused) since it was made */
#define EF_ACCESS_DENIED 4  /* a CPU access wider than the tensor's declaration */
#define EF_UNSUPPORTED 5    /* well-formed, but this build or machine cannot serve it */
#define EF_TOO_SMALL 6      /* a buffer (the tensor's, or an output array) is too small */
#define EF_REGISTRY_FULL 7  /* too many live handles */
#define EF_IO 8             /* a system call failed */
#define EF_OTHER 9          /* anything else (an operation the tensor does not allow) */

/* Element types (the wire codes of blobs and descriptors). */
#define EF_DTYPE_U8 0
#define EF_DTYPE_I8 1
#define EF_DTYPE_U16 2
#define EF_DTYPE_I16 3
#define EF_DTYPE_U32 4
#define EF_DTYPE_I32 5
#define EF_DTYPE_U64 6
#define EF_DTYPE_I64 7
#define EF_DTYPE_F16 8
#define EF_DTYPE_F32 9
#define EF_DTYPE_F64 10

/* Memory: where a new tensor's bytes come from. AUTO tries DMA-BUF, then memfd, then the heap. */
#define EF_MEMORY_AUTO (-1)
#define EF_MEMORY_MEM 0
#define EF_MEMORY_SHM 1
#define EF_MEMORY_DMABUF 2

/* CPU access declarations. NONE and WRITE prefer an uncached heap where one exists. */
#define EF_ACCESS_NONE 0
#define EF_ACCESS_READ 1
#define EF_ACCESS_WRITE 2
#define EF_ACCESS_READWRITE 3

/* Pixel formats (0: not an image). */
#define EF_FORMAT_NONE 0
#define EF_FORMAT_RGB 1
#define EF_FORMAT_BGR 2
#define EF_FORMAT_RGBA 3
#define EF_FORMAT_BGRA 4
#define EF_FORMAT_RGBX 5
#define EF_FORMAT_BGRX 6
#define EF_FORMAT_GRAY8 7
#define EF_FORMAT_PLANAR_RGB 8
#define EF_FORMAT_NV12 9
#define EF_FORMAT_NV21 10
#define EF_FORMAT_NV16 11
#define EF_FORMAT_I420 12
#define EF_FORMAT_YV12 13
#define EF_FORMAT_YUY2 14
#define EF_FORMAT_UYVY 15

/* Blob transport modes. */
#define EF_BLOB_REFERENCE 0 /* the fds (same host; valid while the exporter's tensor lives) */
#define EF_BLOB_INLINE 1    /* the bytes (anywhere; the import is a new allocation) */

/* Descriptor flags (ef_tensor_desc.flags). */
#define EF_DESC_VIEW (1u << 0)
#define EF_DESC_CPU_ACCESS_DECLARED (1u << 1)
#define EF_DESC_CPU_READ (1u << 2)
#define EF_DESC_CPU_WRITE (1u << 3)
#define EF_DESC_BATCHED (1u << 4)

#define EF_MAX_DIMS 8

/* A tensor handle. */
typedef struct ef_tensor {
    uint64_t slot;
    uint64_t generation;
} ef_tensor;

/* A live CPU map: its handle, its bytes and their count. */
typedef struct ef_map {
    uint64_t slot;
    uint64_t generation;
    void *data;
    size_t size;
} ef_map;

/* One plane of a foreign image: its fd (borrowed), where the plane starts, its row stride in
 * bytes (0: the format's natural pitch). */
typedef struct ef_plane {
    int32_t fd;
    uint32_t reserved;
    uint64_t offset;
    uint64_t stride;
} ef_plane;

/* The builder of ef_tensor_from_planes: init, then one ef_planes_add per plane. */
typedef struct ef_planes {
    ef_plane plane[4];
    uint32_t count;
    uint32_t reserved;
} ef_planes;

/* A tensor of this process as plain data (200 bytes, widest fields first, no padding). `shape` is
 * the allocation shape (NV12 is {h + ceil(h/2), w}); `strides` are bytes; entries past `ndim` are
 * zero. `handle` is the buffer's fd (borrowed; -1 for heap memory). A descriptor names a registry
 * slot and its generation: once the tensor is freed, importing it is refused with EF_STALE. */
typedef struct ef_tensor_desc {
    uint64_t generation;
    int64_t handle;
    uint64_t offset;
    uint64_t size;
    uint64_t shape[EF_MAX_DIMS];
    int64_t strides[EF_MAX_DIMS];
    uint32_t slot;
    uint32_t kind;   /* EF_MEMORY_* */
    uint32_t dtype;  /* EF_DTYPE_* */
    uint32_t ndim;
    uint32_t flags;  /* EF_DESC_* */
    uint32_t format; /* EF_FORMAT_* */
    uint32_t width;
    uint32_t height;
    uint32_t pid;
    uint32_t version;
} ef_tensor_desc;

/* The layout check C99 can make: a negative array size fails to compile. */
typedef char ef_tensor_desc_is_200_bytes[sizeof(ef_tensor_desc) == 200 ? 1 : -1];

/* This thread's message for its last failing call (never NULL; "" before any failure). */
const char *ef_last_error(void);
/* The name of a status code ("EF_STALE"). */
const char *ef_status_name(int status);

/* A new tensor of `ndim` dimensions (at most EF_MAX_DIMS). */
int ef_tensor_new(const size_t *shape, size_t ndim, uint32_t dtype, int32_t memory, uint32_t access,
                  ef_tensor *out);
/* A new image: its allocation and row pitch from the format's plane table (64-byte rows on
 * DMA-BUF). */
int ef_tensor_image(uint32_t width, uint32_t height, uint32_t format, uint32_t dtype, uint32_t access,
                    int32_t memory, ef_tensor *out);
/* Import a foreign fd (DMA-BUF or memfd/tmpfs; anything else is EF_UNSUPPORTED). The fd is dup'd;
 * its real size is checked against the shape (EF_TOO_SMALL). */
int ef_tensor_from_fd(int fd, const size_t *shape, size_t ndim, uint32_t dtype, uint32_t access,
                      ef_tensor *out);
/* The planes builder. */
int ef_planes_init(ef_planes *planes);
int ef_planes_add(ef_planes *planes, int fd, uint64_t offset, uint64_t stride);
/* Import a foreign image: one plane (chroma found at the stated pitch), or two for semi-planar
 * formats (NV12's luma and chroma, each with its own fd, offset and stride). */
int ef_tensor_from_planes(const ef_planes *planes, uint32_t width, uint32_t height, uint32_t format,
                          uint32_t access, ef_tensor *out);

/* A zero-copy view of a region (pixels for images, the two innermost dimensions otherwise): the
 * same buffer identity. */
int ef_tensor_view(ef_tensor t, uint64_t x, uint64_t y, uint64_t width, uint64_t height, ef_tensor *out);
/* Element `index` of a batch (the leading dimension). */
int ef_tensor_batch(ef_tensor t, uint64_t index, ef_tensor *out);

/* Map the tensor's bytes for `access` (checked against its declaration: EF_ACCESS_DENIED). DMA-BUF
 * maps are bracketed by the kernel's sync ioctls. The map holds the tensor until ef_tensor_unmap. */
int ef_tensor_map(ef_tensor t, uint32_t access, ef_map *out);
/* The same, as elements of `dtype` (the tensor's own or EF_DTYPE_U8; alignment checked). Index
 * with ef_tensor_strides: strides are bytes and follow padded rows. */
int ef_tensor_map_typed(ef_tensor t, uint32_t dtype, uint32_t access, ef_map *out);
/* End a map; the handle is cleared. A second unmap of the same handle is EF_STALE. */
int ef_tensor_unmap(ef_map *map);

/* A dup of the buffer's fd (shm and DMA-BUF only; the caller closes it). */
int ef_tensor_clone_fd(ef_tensor t, int *fd);

int ef_tensor_ndim(ef_tensor t, size_t *ndim);
/* The shape (outermost first) and byte strides, `ndim` values each: EF_TOO_SMALL when `capacity`
 * is less. */
int ef_tensor_shape(ef_tensor t, uint64_t *shape, size_t capacity);
int ef_tensor_strides(ef_tensor t, int64_t *strides, size_t capacity);
int ef_tensor_dtype(ef_tensor t, uint32_t *dtype);
int ef_tensor_format(ef_tensor t, uint32_t *format);
int ef_tensor_memory(ef_tensor t, uint32_t *memory);
/* Bytes the tensor spans (an image's from its plane table). */
int ef_tensor_size(ef_tensor t, uint64_t *bytes);
/* The buffer's identity: equal for views of one buffer, new for every allocation. */
int ef_tensor_identity(ef_tensor t, uint64_t *id);

/* Export a blob into `buf`. With `capacity` too small (NULL/0 included) the status is EF_TOO_SMALL
 * and `*len` is the size needed. Reference mode refuses heap tensors and views; batches are
 * refused. */
int ef_tensor_export_blob(ef_tensor t, uint32_t mode, uint8_t *buf, size_t capacity, size_t *len);
/* Import a blob: hostile-input parsing; reference blobs dup their fds. */
int ef_tensor_import_blob(const uint8_t *blob, size_t len, ef_tensor *out);

/* A descriptor of the tensor; an import of it by this process while the tensor lives. An import
 * never widens the descriptor's CPU access. */
int ef_tensor_export_descriptor(ef_tensor t, ef_tensor_desc *out);
int ef_tensor_import_descriptor(const ef_tensor_desc *desc, uint32_t access, ef_tensor *out);

/* Release the handle (every copy of it becomes EF_STALE). */
int ef_tensor_free(ef_tensor t);

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIRST_TENSOR_H */
