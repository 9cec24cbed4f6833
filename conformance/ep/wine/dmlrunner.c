/* dmlrunner.c - the harness's DirectML runner: a small Windows program, started once per harness worker under Wine
 * (or on Windows), that loads the genuine onnxruntime.dll and DirectML.dll from the onnxruntime-directml wheel and
 * serves framed requests on stdin/stdout. conformance/ep/wine/protocol.py is the other side; its docstring is the
 * protocol's reference.
 *
 * Build: x86_64-w64-mingw32-gcc -O2 -s dmlrunner.c -o dmlrunner.exe -ld3d12 -ldxgi -lversion (chain.py does it).
 *
 * No onnxruntime header is used: the OrtApi function table is append-only, so each entry's position never changes
 * (onnxruntime_c_api.h); the positions and signatures below are taken from it, and GetApi is asked for the lowest
 * API version that has every entry used (RUNNER_ORT_API_VERSION), so that any onnxruntime.dll from 1.19 on serves.
 * The DirectML device is created through DirectML.dll's exported DMLCreateDevice; the one IDMLDevice method used
 * (CheckFeatureSupport) is called through its vtable slot (DirectML.h), so no DirectML header is needed either.
 *
 * Stdout carries the protocol alone: the handle is duplicated first, and the C runtime's stdout is pointed at
 * stderr, so that nothing a DLL prints can corrupt a frame.
 */
#define COBJMACROS
#define INITGUID
#include <windows.h>
#include <d3d12.h>
#include <dxgi1_6.h>
#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ONNX Runtime C API: the entries used, by their position in struct OrtApi (onnxruntime_c_api.h) ---- */
#define RUNNER_ORT_API_VERSION 12 /* the newest entry used: SessionOptionsAppendExecutionProvider (API 12, ORT 1.12) */

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtAllocator OrtAllocator;

typedef struct OrtApiBase {
  const void *(__stdcall *GetApi)(uint32_t version);
  const char *(__stdcall *GetVersionString)(void);
} OrtApiBase;

enum {
  SLOT_GetErrorMessage = 2,
  SLOT_CreateEnv = 3,
  SLOT_CreateSessionFromArray = 8,
  SLOT_Run = 9,
  SLOT_CreateSessionOptions = 10,
  SLOT_EnableProfiling = 14,
  SLOT_DisableMemPattern = 17,
  SLOT_SetSessionExecutionMode = 13,
  SLOT_SetSessionLogSeverityLevel = 22,
  SLOT_SetSessionGraphOptimizationLevel = 23,
  SLOT_SetIntraOpNumThreads = 24,
  SLOT_CreateTensorWithDataAsOrtValue = 49,
  SLOT_GetTensorMutableData = 51,
  SLOT_GetTensorElementType = 60,
  SLOT_GetDimensionsCount = 61,
  SLOT_GetDimensions = 62,
  SLOT_GetTensorShapeElementCount = 64,
  SLOT_GetTensorTypeAndShape = 65,
  SLOT_CreateCpuMemoryInfo = 69,
  SLOT_GetAllocatorWithDefaultOptions = 78,
  SLOT_AllocatorFree = 76,
  SLOT_ReleaseEnv = 92,
  SLOT_ReleaseStatus = 93,
  SLOT_ReleaseMemoryInfo = 94,
  SLOT_ReleaseSession = 95,
  SLOT_ReleaseValue = 96,
  SLOT_ReleaseTensorTypeAndShapeInfo = 99,
  SLOT_ReleaseSessionOptions = 100,
  SLOT_SessionEndProfiling = 110,
  SLOT_AddSessionConfigEntry = 130,
  SLOT_GetExecutionProviderApi = 195,
  SLOT_SessionOptionsAppendExecutionProvider = 216,
};

typedef const char *(__stdcall *GetErrorMessage_t)(const OrtStatus *);
typedef OrtStatus *(__stdcall *CreateEnv_t)(int level, const char *logid, OrtEnv **);
typedef OrtStatus *(__stdcall *CreateSessionFromArray_t)(const OrtEnv *, const void *, size_t, const OrtSessionOptions *,
                                                         OrtSession **);
typedef OrtStatus *(__stdcall *Run_t)(OrtSession *, const OrtRunOptions *, const char *const *, const OrtValue *const *,
                                      size_t, const char *const *, size_t, OrtValue **);
typedef OrtStatus *(__stdcall *CreateSessionOptions_t)(OrtSessionOptions **);
typedef OrtStatus *(__stdcall *EnableProfiling_t)(OrtSessionOptions *, const wchar_t *);
typedef OrtStatus *(__stdcall *DisableMemPattern_t)(OrtSessionOptions *);
typedef OrtStatus *(__stdcall *SetSessionExecutionMode_t)(OrtSessionOptions *, int);
typedef OrtStatus *(__stdcall *SetInt_t)(OrtSessionOptions *, int);
typedef OrtStatus *(__stdcall *CreateTensorWithDataAsOrtValue_t)(const OrtMemoryInfo *, void *, size_t, const int64_t *,
                                                                  size_t, int, OrtValue **);
typedef OrtStatus *(__stdcall *GetTensorMutableData_t)(OrtValue *, void **);
typedef OrtStatus *(__stdcall *GetTensorElementType_t)(const OrtTensorTypeAndShapeInfo *, int *);
typedef OrtStatus *(__stdcall *GetDimensionsCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(__stdcall *GetDimensions_t)(const OrtTensorTypeAndShapeInfo *, int64_t *, size_t);
typedef OrtStatus *(__stdcall *GetTensorShapeElementCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(__stdcall *GetTensorTypeAndShape_t)(const OrtValue *, OrtTensorTypeAndShapeInfo **);
typedef OrtStatus *(__stdcall *CreateCpuMemoryInfo_t)(int allocator_type, int mem_type, OrtMemoryInfo **);
typedef OrtStatus *(__stdcall *GetAllocatorWithDefaultOptions_t)(OrtAllocator **);
typedef OrtStatus *(__stdcall *AllocatorFree_t)(OrtAllocator *, void *);
typedef void(__stdcall *Release_t)(void *);
typedef OrtStatus *(__stdcall *SessionEndProfiling_t)(OrtSession *, OrtAllocator *, char **);
typedef OrtStatus *(__stdcall *AddSessionConfigEntry_t)(OrtSessionOptions *, const char *, const char *);
typedef OrtStatus *(__stdcall *AppendExecutionProvider_t)(OrtSessionOptions *, const char *, const char *const *,
                                                          const char *const *, size_t);
typedef OrtStatus *(__stdcall *GetExecutionProviderApi_t)(const char *, uint32_t, const void **);
/* OrtDmlApi (dml_provider_factory.h): its first two entries, SessionOptionsAppendExecutionProvider_DML and _DML1. */
typedef struct {
  OrtStatus *(__stdcall *AppendDML)(OrtSessionOptions *, int device_id);
  OrtStatus *(__stdcall *AppendDML1)(OrtSessionOptions *, void *dml_device, ID3D12CommandQueue *queue);
} OrtDmlApi_;

static void *const *ort;  /* the OrtApi table */
#define ORT(name) ((name##_t)ort[SLOT_##name])
#define ORT_RELEASE(name, p) ((Release_t)ort[SLOT_Release##name])((void *)(p))

/* ---- DirectML: DMLCreateDevice and IDMLDevice::CheckFeatureSupport (DirectML.h) ---- */
DEFINE_GUID(IID_IDMLDevice_, 0x6dbd6437, 0x96fd, 0x423f, 0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f);
typedef HRESULT(WINAPI *DMLCreateDevice_t)(ID3D12Device *, UINT flags, REFIID, void **);
typedef HRESULT(WINAPI *D3D12CreateDevice_t)(IUnknown *, D3D_FEATURE_LEVEL, REFIID, void **);
typedef HRESULT(WINAPI *CreateDXGIFactory1_t)(REFIID, void **);
/* IUnknown (3 slots), IDMLObject (GetPrivateData, SetPrivateData, SetPrivateDataInterface, SetName), then
 * IDMLDevice::CheckFeatureSupport: slot 7. */
typedef HRESULT(STDMETHODCALLTYPE *CheckFeatureSupport_t)(void *self, int feature, UINT query_size, const void *query,
                                                          UINT data_size, void *data);
#define DML_FEATURE_FEATURE_LEVELS 1
typedef struct { UINT count; const int *levels; } DmlQueryFeatureLevels;
typedef struct { int max_supported; } DmlDataFeatureLevels;
static const int DML_LEVELS[] = {0x6400, 0x6300, 0x6200, 0x6100, 0x6000, 0x5200, 0x5100, 0x5000,
                                 0x4100, 0x4000, 0x3100, 0x3000, 0x2100, 0x2000, 0x1000};

/* ---- frames ---- */
enum { OP_DESCRIBE = 1, OP_OPEN = 2, OP_RUN = 3, OP_CLOSE = 4, OP_DISPATCH = 5, OP_DISPATCH_BATCH = 6 };
/* ST_D3D: a D3D12 or DirectML step after the operator was compiled failed (the message names it and its HRESULT). */
enum { ST_OK = 0, ST_ORT = 1, ST_EP = 2, ST_BAD = 3, ST_D3D = 4 };
/* ONNX element types (onnx.proto's TensorProto.DataType) that cross the pipe: protocol.py's ELEMENT_TYPES. */
enum {
  ET_FLOAT = 1, ET_UINT8 = 2, ET_INT8 = 3, ET_UINT16 = 4, ET_INT16 = 5, ET_INT32 = 6, ET_INT64 = 7, ET_BOOL = 9,
  ET_FLOAT16 = 10, ET_DOUBLE = 11, ET_UINT32 = 12, ET_UINT64 = 13
};
/* After a run's outputs: whether its profile follows (the session's first run), or why there is none. */
enum { PROFILE_NONE = 0, PROFILE_FOLLOWS = 1, PROFILE_MISSING = 2 };
/* Every session's settings, as ep/rules.py's: ORT_SEQUENTIAL (the DirectML EP requires it); only fatal messages
 * logged (failures come back as statuses; ORT's own log would only repeat them). */
enum { SESSION_EXECUTION_MODE = 0, SESSION_LOG_SEVERITY = 4 };
enum { MAX_SESSIONS = 64, MAX_NAMES = 4096, MAX_DIMS = 16 };
/* The adapter index that names WARP, the software adapter every Windows machine has (IDXGIFactory4::EnumWarpAdapter),
 * not in EnumAdapters1's list: the reference adapter natively (protocol.py's ADAPTER_WARP; docs/triage.md). */
enum { ADAPTER_WARP = 65535 };
enum { RUNNER_COMPILED_KEEP = 256 }; /* compiled operators a device keeps for reuse */

static HANDLE in_handle, out_handle;

static void die(const char *what) {
  fprintf(stderr, "dmlrunner: %s\n", what);
  fflush(stderr);
  ExitProcess(1);
}

/* Every allocation of the runner: zeroed, and the runner's end (with its reason) where there is no memory. */
static void *checked_alloc(size_t size) {
  void *p = calloc(1, size ? size : 1);
  if (!p) die("out of memory");
  return p;
}

static int read_exact(void *buffer, size_t size) { /* 1 = read, 0 = end of input before the first byte */
  char *at = buffer;
  size_t done = 0;
  while (done < size) {
    DWORD chunk = 0, want = (DWORD)((size - done) > (1u << 30) ? (1u << 30) : (size - done));
    if (!ReadFile(in_handle, at + done, want, &chunk, NULL) || chunk == 0) {
      if (done == 0) return 0;
      die("input ended inside a frame");
    }
    done += chunk;
  }
  return 1;
}

static void write_exact(const void *buffer, size_t size) {
  const char *at = buffer;
  while (size > 0) {
    DWORD chunk = 0, want = (DWORD)(size > (1u << 30) ? (1u << 30) : size);
    if (!WriteFile(out_handle, at, want, &chunk, NULL) || chunk == 0) die("cannot write a reply (the harness is gone)");
    at += chunk;
    size -= chunk;
  }
}

/* A request: its bytes and a read cursor. */
typedef struct { unsigned char *data; size_t size, at; } Frame;

static void need(Frame *f, size_t n) {
  if (f->size - f->at < n) die("a request is shorter than its fields say");
}
static uint32_t get_u32(Frame *f) { uint32_t v; need(f, 4); memcpy(&v, f->data + f->at, 4); f->at += 4; return v; }
static int64_t get_i64(Frame *f) { int64_t v; need(f, 8); memcpy(&v, f->data + f->at, 8); f->at += 8; return v; }
static uint64_t get_u64(Frame *f) { uint64_t v; need(f, 8); memcpy(&v, f->data + f->at, 8); f->at += 8; return v; }
static const unsigned char *get_bytes(Frame *f, uint64_t *size) {
  *size = get_u64(f);
  need(f, (size_t)*size);
  const unsigned char *p = f->data + f->at;
  f->at += (size_t)*size;
  return p;
}
/* A string is u32 length + bytes, without a terminator; returned as a new NUL-terminated copy. */
static char *get_str(Frame *f) {
  uint32_t n = get_u32(f);
  need(f, n);
  char *s = malloc((size_t)n + 1);
  if (!s) die("out of memory");
  memcpy(s, f->data + f->at, n);
  s[n] = 0;
  f->at += n;
  return s;
}

/* A reply is built in a growing buffer, then sent as one frame. A large blob (an output) is not copied into it: it is
 * written from where it lies (``put_ref``), so that the runner does not hold the case's outputs twice. */
typedef struct { const void *data; uint64_t size; size_t at; } Piece; /* ``size`` bytes sent at ``at`` of the buffer */
typedef struct { unsigned char *data; size_t size, cap; Piece *pieces; uint32_t n_pieces, pieces_cap; } Out;

static void put(Out *o, const void *p, size_t n) {
  if (o->size + n > o->cap) {
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->size + n) cap *= 2;
    o->data = realloc(o->data, cap);
    if (!o->data) die("out of memory");
    o->cap = cap;
  }
  memcpy(o->data + o->size, p, n);
  o->size += n;
}
static void put_u8(Out *o, uint8_t v) { put(o, &v, 1); }
static void put_u32(Out *o, uint32_t v) { put(o, &v, 4); }
static void put_i64(Out *o, int64_t v) { put(o, &v, 8); }
static void put_u64(Out *o, uint64_t v) { put(o, &v, 8); }
static void put_str(Out *o, const char *s) { size_t n = strlen(s); put_u32(o, (uint32_t)n); put(o, s, n); }
static void put_bytes(Out *o, const void *p, uint64_t n) { put_u64(o, n); put(o, p, (size_t)n); }
/* A blob whose bytes stay where they are until the reply is sent. */
static void put_ref(Out *o, const void *p, uint64_t n) {
  put_u64(o, n);
  if (o->n_pieces == o->pieces_cap) {
    o->pieces_cap = o->pieces_cap ? 2 * o->pieces_cap : 8;
    o->pieces = realloc(o->pieces, o->pieces_cap * sizeof *o->pieces);
    if (!o->pieces) die("out of memory");
  }
  o->pieces[o->n_pieces++] = (Piece){p, n, o->size};
}

static void drop(Out *o) {
  free(o->data);
  free(o->pieces);
  *o = (Out){0};
}

static void send_frame(Out *o) {
  uint64_t total = o->size;
  for (uint32_t i = 0; i < o->n_pieces; i++) total += o->pieces[i].size;
  uint32_t n = (uint32_t)total;
  if ((uint64_t)n != total) die("a reply over 4 GiB");
  write_exact(&n, 4);
  size_t from = 0;
  for (uint32_t i = 0; i < o->n_pieces; i++) {
    write_exact(o->data + from, o->pieces[i].at - from);
    write_exact(o->pieces[i].data, (size_t)o->pieces[i].size);
    from = o->pieces[i].at;
  }
  write_exact(o->data + from, o->size - from);
  drop(o);
}

static void send_error(int status, const char *message) {
  Out o = {0};
  put_u8(&o, (uint8_t)status);
  put_str(&o, message);
  send_frame(&o);
}

/* An OrtStatus as an error reply; 1 when there was one (and it is released). */
static int ort_failed(OrtStatus *status, int kind) {
  if (!status) return 0;
  send_error(kind, ORT(GetErrorMessage)(status));
  ORT_RELEASE(Status, status);
  return 1;
}

/* ---- JSON text for describe ---- */
static void json_text(Out *o, const char *s) {
  put(o, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; put(o, esc, 2); }
    else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); put(o, esc, 6); }
    else put(o, &c, 1);
  }
  put(o, "\"", 1);
}
static void json_key(Out *o, const char *key, int *first) {
  if (!*first) put(o, ",", 1);
  *first = 0;
  json_text(o, key);
  put(o, ":", 1);
}
static void json_str(Out *o, const char *key, const char *value, int *first) { json_key(o, key, first); json_text(o, value); }
static void json_num(Out *o, const char *key, double value, int *first) {
  char b[64];
  json_key(o, key, first);
  snprintf(b, sizeof b, "%.17g", value);
  put(o, b, strlen(b));
}
static void json_wide(Out *o, const char *key, const wchar_t *value, int *first) {
  char b[512];
  if (!WideCharToMultiByte(CP_UTF8, 0, value, -1, b, sizeof b, NULL, NULL)) b[0] = 0;
  json_str(o, key, b, first);
}

static double now_ms(void) {
  LARGE_INTEGER f, c;
  QueryPerformanceFrequency(&f);
  QueryPerformanceCounter(&c);
  return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
}

/* The file version of a loaded module ("1.15.4.0"), or "" where it has none. */
static void module_version(const char *module, char *text, size_t size) {
  wchar_t path[MAX_PATH];
  DWORD handle = 0, n;
  text[0] = 0;
  HMODULE m = GetModuleHandleA(module);
  if (!m || !GetModuleFileNameW(m, path, MAX_PATH)) return;
  n = GetFileVersionInfoSizeW(path, &handle);
  if (!n) return;
  void *block = malloc(n);
  VS_FIXEDFILEINFO *info = NULL;
  UINT len = 0;
  if (block && GetFileVersionInfoW(path, 0, n, block) && VerQueryValueW(block, L"\\", (void **)&info, &len) && info)
    snprintf(text, size, "%lu.%lu.%lu.%lu", (unsigned long)HIWORD(info->dwFileVersionMS),
             (unsigned long)LOWORD(info->dwFileVersionMS), (unsigned long)HIWORD(info->dwFileVersionLS),
             (unsigned long)LOWORD(info->dwFileVersionLS));
  free(block);
}

/* GetProcAddress as the one function type every function pointer converts from without a warning (GCC's
 * -Wcast-function-type exempts void (*)(void)): each caller casts it to the export's own type. */
static void (*proc_address(HMODULE module, const char *name))(void) {
  return (void (*)(void))GetProcAddress(module, name);
}

/* DXGI adapter ``index`` of ``factory``: EnumAdapters1's, or WARP's for ADAPTER_WARP. */
static HRESULT find_adapter(IDXGIFactory1 *factory, UINT index, IDXGIAdapter1 **found) {
  IDXGIFactory4 *warp = NULL;
  HRESULT hr;
  if (index != ADAPTER_WARP) return IDXGIFactory1_EnumAdapters1(factory, index, found);
  hr = IDXGIFactory1_QueryInterface(factory, &IID_IDXGIFactory4, (void **)&warp);
  if (SUCCEEDED(hr)) {
    hr = IDXGIFactory4_EnumWarpAdapter(warp, &IID_IDXGIAdapter1, (void **)found);
    IDXGIFactory4_Release(warp);
  }
  return hr;
}

/* A D3D12 device on DXGI adapter ``index`` (as onnxruntime's device_id path makes one: feature level 11_0); the
 * adapter is returned too where ``adapter`` is given. The HRESULT says why there is none. */
static HRESULT make_device(UINT index, IDXGIAdapter1 **adapter, ID3D12Device **device) {
  HMODULE dxgi = LoadLibraryA("dxgi.dll"), d3d = LoadLibraryA("d3d12.dll");
  CreateDXGIFactory1_t cf = dxgi ? (CreateDXGIFactory1_t)proc_address(dxgi, "CreateDXGIFactory1") : NULL;
  D3D12CreateDevice_t create = d3d ? (D3D12CreateDevice_t)proc_address(d3d, "D3D12CreateDevice") : NULL;
  IDXGIFactory1 *factory = NULL;
  IDXGIAdapter1 *found = NULL;
  HRESULT hr = cf && create ? cf(&IID_IDXGIFactory1, (void **)&factory) : E_NOINTERFACE;
  if (SUCCEEDED(hr)) hr = find_adapter(factory, index, &found);
  if (SUCCEEDED(hr)) hr = create((IUnknown *)found, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)device);
  if (factory) IDXGIFactory1_Release(factory);
  if (found && adapter && SUCCEEDED(hr)) *adapter = found;
  else if (found) IDXGIAdapter1_Release(found);
  return hr;
}

/* One D3D12 device, direct queue and DirectML device per adapter for the runner's life, handed to every session
 * (SessionOptionsAppendExecutionProvider_DML1): a device per session, as the provider-options path makes them,
 * exhausted NVIDIA's driver under vkd3d-proton after about 250 sessions (887A0004 from every later one). */
typedef struct {
  int adapter;
  ID3D12Device *device;
  ID3D12CommandQueue *queue;
  void *dml;
  /* What every operator dispatch (dispatch()) reuses, made on the first: creating a shader-visible descriptor heap
   * took ~290 ms under vkd3d-proton on lavapipe, nearly all of a small case's time. */
  ID3D12DescriptorHeap *heap;
  UINT heap_size;
  /* A command allocator and list per queue type, [0] DIRECT and [1] COMPUTE (a dispatch's DISPATCH_COMPUTE_QUEUE):
   * a list records for one type of queue; the COMPUTE queue is made on its first dispatch. */
  ID3D12CommandQueue *compute_queue;
  ID3D12CommandAllocator *allocators[2];
  ID3D12GraphicsCommandList *lists[2];
  ID3D12Fence *fence;
  UINT64 fence_value;
  HANDLE event;
  void *recorder; /* IDMLCommandRecorder */
  ID3D12Resource *pool_gpu, *pool_upload, *pool_readback; /* the buffers every dispatch's bindings are slices of */
  unsigned char *upload_map, *readback_map;
  UINT64 pool_size, staging_size; /* pool_gpu's bytes; pool_upload's and pool_readback's (the bindings' only) */
  int list_open; /* lists[open_kind] is recording (a failed step closes it) */
  int open_kind;
  /* Compiled operators by their request's descriptor (compiled_key): a case whose descriptor is byte for byte one
   * compiled before dispatches that one (DISPATCH_NO_REUSE: never), its initializer run again on its own bindings. */
  struct { unsigned char *key; size_t size; void *compiled; } compiled[RUNNER_COMPILED_KEEP];
  uint32_t compiled_next; /* the slot the next one takes, the oldest's once all are taken */
} Shared;
static Shared shared[8];

static Shared *shared_device(int index, char *why, size_t size) {
  Shared *slot = NULL;
  for (int i = 0; i < 8 && !slot; i++)
    if (shared[i].dml && shared[i].adapter == index) return &shared[i];
  for (int i = 0; i < 8 && !slot; i++)
    if (!shared[i].dml) slot = &shared[i];
  if (!slot) { snprintf(why, size, "too many adapters"); return NULL; }
  D3D12_COMMAND_QUEUE_DESC desc = {0};
  desc.Type = D3D12_COMMAND_LIST_TYPE_DIRECT;
  HMODULE dml = LoadLibraryA("DirectML.dll");
  DMLCreateDevice_t dcd = dml ? (DMLCreateDevice_t)proc_address(dml, "DMLCreateDevice") : NULL;
  HRESULT hr = make_device((UINT)index, NULL, &slot->device);
  if (FAILED(hr)) { snprintf(why, size, "D3D12CreateDevice on adapter %d failed: HRESULT 0x%08lx", index, (unsigned long)hr); return NULL; }
  hr = ID3D12Device_CreateCommandQueue(slot->device, &desc, &IID_ID3D12CommandQueue, (void **)&slot->queue);
  if (SUCCEEDED(hr)) hr = dcd ? dcd(slot->device, 0, &IID_IDMLDevice_, &slot->dml) : E_NOINTERFACE;
  if (FAILED(hr)) {
    snprintf(why, size, "the DirectML device on adapter %d could not be made: HRESULT 0x%08lx", index, (unsigned long)hr);
    /* Nothing of a half-made slot is kept: a reference left here would pin the adapter's D3D12 device, so that the
     * next try (a describe, then a session) would get it back instead of a new one. */
    if (slot->queue) ID3D12CommandQueue_Release(slot->queue);
    ID3D12Device_Release(slot->device);
    slot->queue = NULL;
    slot->device = NULL;
    slot->dml = NULL;
    return NULL;
  }
  slot->adapter = index;
  return slot;
}

/* A removed device is of no more use: its slot is emptied (the runner's references released; a session that
 * holds the device keeps its own), so that the next request on that adapter makes a new one. */
static void forget_device(const Shared *device) {
  for (int i = 0; i < 8; i++) {
    if (&shared[i] != device || !shared[i].dml) continue;
    if (shared[i].recorder) ((Release_t)((void **)*(void **)shared[i].recorder)[2])(shared[i].recorder);
    for (int k = 0; k < RUNNER_COMPILED_KEEP; k++) {
      void *kept = shared[i].compiled[k].compiled;
      if (kept) ((Release_t)((void **)*(void **)kept)[2])(kept);
      free(shared[i].compiled[k].key);
    }
    if (shared[i].heap) ID3D12DescriptorHeap_Release(shared[i].heap);
    for (int k = 0; k < 2; k++) {
      if (shared[i].lists[k]) ID3D12GraphicsCommandList_Release(shared[i].lists[k]);
      if (shared[i].allocators[k]) ID3D12CommandAllocator_Release(shared[i].allocators[k]);
    }
    if (shared[i].compute_queue) ID3D12CommandQueue_Release(shared[i].compute_queue);
    if (shared[i].fence) ID3D12Fence_Release(shared[i].fence);
    if (shared[i].event) CloseHandle(shared[i].event);
    if (shared[i].pool_gpu) ID3D12Resource_Release(shared[i].pool_gpu);
    if (shared[i].pool_upload) ID3D12Resource_Release(shared[i].pool_upload);
    if (shared[i].pool_readback) ID3D12Resource_Release(shared[i].pool_readback);
    ((Release_t)((void **)*(void **)shared[i].dml)[2])(shared[i].dml);
    ID3D12CommandQueue_Release(shared[i].queue);
    ID3D12Device_Release(shared[i].device);
    memset(&shared[i], 0, sizeof shared[i]);
  }
}

static const char *d3d_level_text(D3D_FEATURE_LEVEL level) {
  switch ((int)level) {
    case 0xc200: return "12_2";
    case 0xc100: return "12_1";
    case 0xc000: return "12_0";
    case 0xb100: return "11_1";
    case 0xb000: return "11_0";
    default: return "?";
  }
}

/* describe: the DXGI adapters, the D3D12 device on adapter ``index`` (feature level, shader model), DirectML's own
 * highest feature level on it, and the file versions of the DLLs; a JSON object. A step that fails says so in an
 * "error" member and the later steps are skipped. */

/* One adapter of describe's list, as JSON: its index (``index``), description, ids, memory and flags. */
static void json_adapter(Out *j, IDXGIAdapter1 *a, UINT index, int first_in_list) {
  DXGI_ADAPTER_DESC1 d;
  int inner = 1;
  IDXGIAdapter1_GetDesc1(a, &d);
  if (!first_in_list) put(j, ",", 1);
  put(j, "{", 1);
  json_num(j, "index", index, &inner);
  json_wide(j, "description", d.Description, &inner);
  json_num(j, "vendor_id", d.VendorId, &inner);
  json_num(j, "device_id", d.DeviceId, &inner);
  json_num(j, "revision", d.Revision, &inner);
  json_num(j, "dedicated_video_memory_mib", (double)(d.DedicatedVideoMemory >> 20), &inner);
  json_num(j, "shared_system_memory_mib", (double)(d.SharedSystemMemory >> 20), &inner);
  json_num(j, "flags", d.Flags, &inner);
  put(j, "}", 1);
}

static void describe(Frame *f) {
  uint32_t index = get_u32(f);
  Out j = {0};
  int first = 1, any = 1;
  char text[256];
  put(&j, "{", 1);
  json_str(&j, "onnxruntime", ((const OrtApiBase *(__stdcall *)(void))proc_address(GetModuleHandleA("onnxruntime.dll"), "OrtGetApiBase"))()->GetVersionString(), &first);
  json_num(&j, "ort_api_version", RUNNER_ORT_API_VERSION, &first);

  HMODULE dxgi = LoadLibraryA("dxgi.dll");
  CreateDXGIFactory1_t cf = dxgi ? (CreateDXGIFactory1_t)proc_address(dxgi, "CreateDXGIFactory1") : NULL;
  IDXGIFactory1 *factory = NULL;
  IDXGIAdapter1 *chosen = NULL;
  json_key(&j, "adapters", &first);
  put(&j, "[", 1);
  if (cf && SUCCEEDED(cf(&IID_IDXGIFactory1, (void **)&factory))) {
    IDXGIAdapter1 *a;
    UINT i = 0;
    for (; IDXGIFactory1_EnumAdapters1(factory, i, &a) == S_OK; i++) {
      json_adapter(&j, a, i, i == 0);
      if (i == index) chosen = a;
      else IDXGIAdapter1_Release(a);
    }
    if (index == ADAPTER_WARP && SUCCEEDED(find_adapter(factory, index, &a))) { /* listed where asked for */
      json_adapter(&j, a, ADAPTER_WARP, i == 0);
      chosen = a;
    }
  }
  put(&j, "]", 1);
  json_num(&j, "adapter_index", index, &first);
  if (!chosen) {
    json_str(&j, "error", factory ? "no DXGI adapter at that index" : "CreateDXGIFactory1 failed", &first);
    any = 0;
  }

  ID3D12Device *device = NULL;
  if (any) {
    double t = now_ms();
    HRESULT hr = make_device(index, NULL, &device);
    json_num(&j, "d3d12_create_ms", now_ms() - t, &first);
    if (FAILED(hr)) {
      snprintf(text, sizeof text, "D3D12CreateDevice failed: HRESULT 0x%08lx", (unsigned long)hr);
      json_str(&j, "error", text, &first);
      any = 0;
    }
  }
  if (any) {
    D3D_FEATURE_LEVEL asked[] = {(D3D_FEATURE_LEVEL)0xc200, D3D_FEATURE_LEVEL_12_1, D3D_FEATURE_LEVEL_12_0,
                                 D3D_FEATURE_LEVEL_11_1, D3D_FEATURE_LEVEL_11_0};
    D3D12_FEATURE_DATA_FEATURE_LEVELS levels = {5, asked, D3D_FEATURE_LEVEL_11_0};
    if (SUCCEEDED(ID3D12Device_CheckFeatureSupport(device, D3D12_FEATURE_FEATURE_LEVELS, &levels, sizeof levels)))
      json_str(&j, "d3d12_feature_level", d3d_level_text(levels.MaxSupportedFeatureLevel), &first);
    for (int sm = 0x69; sm >= 0x60; sm--) { /* the highest shader model the device answers for */
      D3D12_FEATURE_DATA_SHADER_MODEL model = {(D3D_SHADER_MODEL)sm};
      if (SUCCEEDED(ID3D12Device_CheckFeatureSupport(device, D3D12_FEATURE_SHADER_MODEL, &model, sizeof model))) {
        snprintf(text, sizeof text, "%d.%d", (int)model.HighestShaderModel >> 4, (int)model.HighestShaderModel & 15);
        json_str(&j, "shader_model", text, &first);
        break;
      }
    }
    HMODULE dml = LoadLibraryA("DirectML.dll");
    DMLCreateDevice_t dcd = dml ? (DMLCreateDevice_t)proc_address(dml, "DMLCreateDevice") : NULL;
    void **dml_device = NULL;
    double t = now_ms();
    HRESULT hr = dcd ? dcd(device, 0, &IID_IDMLDevice_, (void **)&dml_device) : E_FAIL;
    json_num(&j, "dml_create_ms", now_ms() - t, &first);
    if (FAILED(hr)) {
      snprintf(text, sizeof text, "DMLCreateDevice failed: HRESULT 0x%08lx", (unsigned long)hr);
      json_str(&j, "error", text, &first);
    } else {
      CheckFeatureSupport_t check = (CheckFeatureSupport_t)((void **)*dml_device)[7];
      int best = 0;
      for (size_t i = 0; i < sizeof DML_LEVELS / sizeof DML_LEVELS[0] && !best; i++) {
        DmlQueryFeatureLevels query = {1, &DML_LEVELS[i]};
        DmlDataFeatureLevels data = {0};
        if (SUCCEEDED(check(dml_device, DML_FEATURE_FEATURE_LEVELS, sizeof query, &query, sizeof data, &data)) &&
            data.max_supported == DML_LEVELS[i])
          best = DML_LEVELS[i];
      }
      snprintf(text, sizeof text, "%d_%d", best >> 12, (best >> 8) & 15);
      json_str(&j, "dml_feature_level", best ? text : "", &first);
      ((Release_t)((void **)*dml_device)[2])(dml_device);
    }
    /* The runner's own device on this adapter (shared_device) made now, while this one lives: D3D12 hands back the
     * device that exists for an adapter, so the device measured above becomes the one every session uses, and a
     * run's first session finds it made (a worker describes as it starts: the describe is its warm-up). */
    char why[160];
    shared_device((int)index, why, sizeof why);
    ID3D12Device_Release(device);
  }
  if (chosen) IDXGIAdapter1_Release(chosen);
  if (factory) IDXGIFactory1_Release(factory);
  json_key(&j, "files", &first);
  put(&j, "{", 1);
  int inner = 1;
  const char *modules[] = {"onnxruntime.dll", "DirectML.dll", "d3d12.dll", "d3d12core.dll", "dxgi.dll"};
  for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
    module_version(modules[i], text, sizeof text);
    json_str(&j, modules[i], text, &inner);
  }
  put(&j, "}}", 2);
  put_u8(&j, 0); /* a terminator, so the text can be sent as a C string */
  Out o = {0};
  put_u8(&o, ST_OK);
  put_str(&o, (const char *)j.data);
  free(j.data);
  send_frame(&o);
}

/* ---- sessions ---- */
typedef struct { OrtSession *session; int profiled; } Slot;
static Slot slots[MAX_SESSIONS];
static OrtEnv *env;
static OrtMemoryInfo *cpu_memory;
static wchar_t profile_prefix[MAX_PATH];

/* open: the model's bytes, the DirectML EP's provider options, session config entries, the graph optimization level
 * and the intra-op threads (0: onnxruntime's default). Replies the session's number; ST_EP where the EP could not be
 * appended (its device was not created), ST_ORT where the session was refused. */
static void open_session(Frame *f) {
  uint64_t model_size;
  const unsigned char *model = get_bytes(f, &model_size);
  uint32_t n_options = get_u32(f);
  if (n_options > MAX_NAMES) die("too many options");
  char **keys = checked_alloc((n_options + 1) * sizeof *keys), **values = checked_alloc((n_options + 1) * sizeof *values);
  for (uint32_t i = 0; i < n_options; i++) { keys[i] = get_str(f); values[i] = get_str(f); }
  uint32_t n_config = get_u32(f);
  if (n_config > MAX_NAMES) die("too many config entries");
  char **config = checked_alloc((2 * (size_t)n_config + 1) * sizeof *config);
  for (uint32_t i = 0; i < 2 * n_config; i++) config[i] = get_str(f);
  uint32_t level = get_u32(f), threads = get_u32(f);
  int slot = -1;
  for (int i = 0; i < MAX_SESSIONS && slot < 0; i++)
    if (!slots[i].session) slot = i;

  OrtSessionOptions *so = NULL;
  OrtSession *session = NULL;
  wchar_t prefix[MAX_PATH + 32];
  if (slot < 0) { send_error(ST_BAD, "too many open sessions"); goto done; }
  if (ort_failed(ORT(CreateSessionOptions)(&so), ST_ORT)) goto done;
  swprintf(prefix, MAX_PATH + 32, L"%ls_%d", profile_prefix, slot);
  if (ort_failed(ORT(DisableMemPattern)(so), ST_ORT) || ort_failed(ORT(SetSessionExecutionMode)(so, SESSION_EXECUTION_MODE), ST_ORT) ||
      ort_failed(((SetInt_t)ort[SLOT_SetSessionLogSeverityLevel])(so, SESSION_LOG_SEVERITY), ST_ORT) ||
      ort_failed(((SetInt_t)ort[SLOT_SetSessionGraphOptimizationLevel])(so, (int)level), ST_ORT) ||
      ort_failed(ORT(EnableProfiling)(so, prefix), ST_ORT))
    goto done;
  if (threads && ort_failed(((SetInt_t)ort[SLOT_SetIntraOpNumThreads])(so, (int)threads), ST_ORT)) goto done;
  for (uint32_t i = 0; i < n_config; i++)
    if (ort_failed(ORT(AddSessionConfigEntry)(so, config[2 * i], config[2 * i + 1]), ST_ORT)) goto done;
  if (n_options == 1 && !strcmp(keys[0], "device_id")) { /* the adapter alone: the runner's shared device */
    char why[160];
    const OrtDmlApi_ *dml_api = NULL;
    const Shared *device = shared_device(atoi(values[0]), why, sizeof why);
    if (!device) { send_error(ST_EP, why); goto done; }
    if (ort_failed(((GetExecutionProviderApi_t)ort[SLOT_GetExecutionProviderApi])("DML", RUNNER_ORT_API_VERSION,
                                                                                  (const void **)&dml_api),
                   ST_EP) ||
        ort_failed(dml_api->AppendDML1(so, device->dml, device->queue), ST_EP))
      goto done;
  } else if (ort_failed(((AppendExecutionProvider_t)ort[SLOT_SessionOptionsAppendExecutionProvider])(
                            so, "DML", (const char *const *)keys, (const char *const *)values, n_options),
                        ST_EP)) {
    goto done; /* other options (a preference, a filter, metacommands off): the EP makes its own device */
  }
  if (ort_failed(ORT(CreateSessionFromArray)(env, model, (size_t)model_size, so, &session), ST_ORT)) goto done;
  slots[slot].session = session;
  slots[slot].profiled = 0;
  {
    Out o = {0};
    put_u8(&o, ST_OK);
    put_u32(&o, (uint32_t)slot);
    send_frame(&o);
  }
done:
  if (so) ORT_RELEASE(SessionOptions, so);
  for (uint32_t i = 0; i < n_options; i++) { free(keys[i]); free(values[i]); }
  for (uint32_t i = 0; i < 2 * n_config; i++) free(config[i]);
  free(keys);
  free(values);
  free(config);
}

static size_t element_size(int type) {
  switch (type) {
    case ET_UINT8: case ET_INT8: case ET_BOOL: return 1;
    case ET_UINT16: case ET_INT16: case ET_FLOAT16: return 2;
    case ET_FLOAT: case ET_INT32: case ET_UINT32: return 4;
    case ET_INT64: case ET_DOUBLE: case ET_UINT64: return 8;
    default: return 0;
  }
}

static Slot *session_of(Frame *f) {
  uint32_t id = get_u32(f);
  if (id >= MAX_SESSIONS || !slots[id].session) {
    send_error(ST_BAD, "no such session");
    return NULL;
  }
  return &slots[id];
}

/* The profile's JSON text of the session's first run (profiling then ends): where each node ran. */
static void put_profile(Out *o, Slot *slot) {
  OrtAllocator *allocator = NULL;
  char *name = NULL;
  OrtStatus *status = ORT(GetAllocatorWithDefaultOptions)(&allocator);
  if (!status) status = ORT(SessionEndProfiling)(slot->session, allocator, &name);
  slot->profiled = 1;
  if (status) {
    put_u8(o, PROFILE_MISSING);
    put_str(o, ORT(GetErrorMessage)(status));
    ORT_RELEASE(Status, status);
    return;
  }
  FILE *file = fopen(name, "rb");
  if (!file) {
    put_u8(o, PROFILE_MISSING);
    put_str(o, "the profile file could not be opened");
  } else {
    fseek(file, 0, SEEK_END);
    long n = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc(n > 0 ? (size_t)n : 1);
    size_t got = text ? fread(text, 1, (size_t)(n > 0 ? n : 0), file) : 0;
    fclose(file);
    put_u8(o, PROFILE_FOLLOWS);
    put_bytes(o, text, got);
    free(text);
    DeleteFileA(name);
  }
  ORT(AllocatorFree)(allocator, name);
}

/* run: named inputs (element type, shape, bytes) and the output names; replies each output's element type, shape and
 * bytes, then, after a session's first run, its profile. */
static void run(Frame *f) {
  Slot *slot = session_of(f);
  if (!slot) return;
  uint32_t n_in = get_u32(f);
  if (n_in > MAX_NAMES) die("too many inputs");
  char **in_names = checked_alloc((n_in + 1) * sizeof *in_names);
  OrtValue **in_values = checked_alloc((n_in + 1) * sizeof *in_values);
  void **in_data = checked_alloc((n_in + 1) * sizeof *in_data);
  uint32_t n_out = 0;
  char **out_names = NULL;
  OrtValue **out_values = NULL;
  Out o = {0};
  int failed = 0;
  for (uint32_t i = 0; i < n_in && !failed; i++) {
    in_names[i] = get_str(f);
    int type = (int)get_u32(f);
    uint32_t rank = get_u32(f);
    int64_t dims[MAX_DIMS];
    if (rank > MAX_DIMS) die("too many dimensions");
    for (uint32_t d = 0; d < rank; d++) dims[d] = get_i64(f);
    uint64_t size;
    const unsigned char *bytes = get_bytes(f, &size);
    in_data[i] = malloc(size ? (size_t)size : 1); /* ORT reads it in place: copied out of the request, aligned */
    if (!in_data[i]) die("out of memory");
    memcpy(in_data[i], bytes, (size_t)size);
    failed = ort_failed(ORT(CreateTensorWithDataAsOrtValue)(cpu_memory, in_data[i], (size_t)size, dims, rank, type,
                                                            &in_values[i]),
                        ST_ORT);
  }
  if (!failed) {
    n_out = get_u32(f);
    if (n_out > MAX_NAMES) die("too many outputs");
    out_names = checked_alloc((n_out + 1) * sizeof *out_names);
    out_values = checked_alloc((n_out + 1) * sizeof *out_values);
    for (uint32_t i = 0; i < n_out; i++) out_names[i] = get_str(f);
    double t = now_ms();
    failed = ort_failed(ORT(Run)(slot->session, NULL, (const char *const *)in_names, (const OrtValue *const *)in_values,
                                 n_in, (const char *const *)out_names, n_out, out_values),
                        ST_ORT);
    t = now_ms() - t;
    if (!failed) {
      put_u8(&o, ST_OK);
      put_u32(&o, n_out);
      for (uint32_t i = 0; i < n_out && !failed; i++) {
        OrtTensorTypeAndShapeInfo *info = NULL;
        int type = 0;
        size_t rank = 0, count = 0;
        int64_t dims[MAX_DIMS];
        void *data = NULL;
        OrtStatus *status = ORT(GetTensorTypeAndShape)(out_values[i], &info);
        if (!status) status = ORT(GetTensorElementType)(info, &type);
        if (!status) status = ORT(GetDimensionsCount)(info, &rank);
        if (!status && rank > MAX_DIMS) die("an output of too many dimensions");
        if (!status) status = ORT(GetDimensions)(info, dims, rank);
        if (!status) status = ORT(GetTensorShapeElementCount)(info, &count);
        if (!status) status = ORT(GetTensorMutableData)(out_values[i], &data);
        if (info) ORT_RELEASE(TensorTypeAndShapeInfo, info);
        if (status || !element_size(type)) {
          drop(&o);
          if (status) ort_failed(status, ST_ORT);
          else send_error(ST_BAD, "an output of an element type the runner cannot send");
          failed = 1;
          break;
        }
        put_u32(&o, (uint32_t)type);
        put_u32(&o, (uint32_t)rank);
        for (size_t d = 0; d < rank; d++) put_i64(&o, dims[d]);
        put_ref(&o, data, (uint64_t)count * element_size(type)); /* sent before out_values are released */
      }
      if (!failed) {
        char ms[32];
        snprintf(ms, sizeof ms, "%.3f", t);
        put_str(&o, ms);
        if (slot->profiled) put_u8(&o, PROFILE_NONE);
        else put_profile(&o, slot);
        send_frame(&o);
      }
    }
  }
  for (uint32_t i = 0; i < n_in; i++) {
    if (in_values[i]) ORT_RELEASE(Value, in_values[i]);
    free(in_data[i]);
    free(in_names[i]);
  }
  for (uint32_t i = 0; i < n_out; i++) {
    if (out_values && out_values[i]) ORT_RELEASE(Value, out_values[i]);
    free(out_names[i]);
  }
  free(in_names);
  free(in_values);
  free(in_data);
  free(out_names);
  free(out_values);
}

static void close_session(Frame *f) {
  Slot *slot = session_of(f);
  if (!slot) return;
  ORT_RELEASE(Session, slot->session);
  slot->session = NULL;
  Out o = {0};
  put_u8(&o, ST_OK);
  send_frame(&o);
}

/* ---- DirectML's operator API: one operator descriptor, created, compiled, initialized and dispatched ----
 *
 * What is declared here comes from DirectML.h's public facts, so that the runner needs no DirectML header: the
 * interface IDs, and each method's vtable slot (IUnknown's 3, IDMLObject's 4, then the interface's own in the
 * header's order). The descriptor's structs are not declared here at all: the harness lays them out
 * (conformance/ep/dml_abi.py) in one block whose pointer fields hold offsets into the block, and the runner turns
 * those into addresses. So the runner hands CreateOperator exactly the descriptor the case wrote, for any operator.
 */
DEFINE_GUID(IID_IDMLOperator_, 0x26caae7a, 0x3081, 0x4633, 0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d);
DEFINE_GUID(IID_IDMLCompiledOperator_, 0x6b15e56a, 0xbf5c, 0x4902, 0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4);
DEFINE_GUID(IID_IDMLOperatorInitializer_, 0x427c1113, 0x435c, 0x469c, 0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13);
DEFINE_GUID(IID_IDMLBindingTable_, 0x29c687dc, 0xde74, 0x4e3b, 0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc);
DEFINE_GUID(IID_IDMLCommandRecorder_, 0xe6857a76, 0x2e3e, 0x4fdd, 0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53);
DEFINE_GUID(IID_IDMLDevice1_, 0xa0884f9a, 0xd2be, 0x4355, 0xaa, 0x5d, 0x59, 0x01, 0x28, 0x1a, 0xd1, 0xd2);

enum { /* vtable slots (DirectML.h) */
  DML_SLOT_QueryInterface = 0,
  DML_SLOT_AddRef = 1,
  DML_SLOT_Release = 2,
  DML_SLOT_CreateOperator = 8,            /* IDMLDevice */
  DML_SLOT_CompileOperator = 9,
  DML_SLOT_CreateOperatorInitializer = 10,
  DML_SLOT_CreateCommandRecorder = 11,
  DML_SLOT_CreateBindingTable = 12,
  DML_SLOT_GetDeviceRemovedReason = 15,
  DML_SLOT_CompileGraph = 17,             /* IDMLDevice1 */
  DML_SLOT_GetBindingProperties = 8,      /* IDMLDispatchable */
  DML_SLOT_BindInputs = 8,                /* IDMLBindingTable */
  DML_SLOT_BindOutputs = 9,
  DML_SLOT_BindTemporaryResource = 10,
  DML_SLOT_BindPersistentResource = 11,
  DML_SLOT_Reset = 12,
  DML_SLOT_RecordDispatch = 8,            /* IDMLCommandRecorder */
};
enum { DML_BINDING_NONE = 0, DML_BINDING_BUFFER = 1, DML_BINDING_BUFFER_ARRAY = 2 }; /* DML_BINDING_TYPE */
enum { DML_GRAPH_NODE_TYPE_OPERATOR = 1 };
enum { DML_GRAPH_EDGE_TYPE_INPUT = 1, DML_GRAPH_EDGE_TYPE_OUTPUT = 2 };
enum { MAX_BINDINGS = 16 };
/* Request flags (protocol.py's DISPATCH_*): compile nothing, only ask CreateOperator whether it takes the desc; run
 * on a COMPUTE queue (else the DIRECT one); compile a one-node graph (IDMLDevice1::CompileGraph) instead of the
 * operator (CompileOperator). */
enum { DISPATCH_CREATE_ONLY = 1, DISPATCH_COMPUTE_QUEUE = 2, DISPATCH_COMPILE_GRAPH = 4, DISPATCH_NO_REUSE = 8 };
/* The most dispatches one dispatch_batch request holds. */
enum { DISPATCH_BATCH_MAX = 64 };
/* How a dispatch's input is bound (protocol.py's INPUT_*): not at all (an optional tensor left out); to the
 * operator; or to the initializer alone, its tensor desc flagged DML_TENSOR_FLAG_OWNED_BY_DML. */
enum { INPUT_UNBOUND = 0, INPUT_BOUND = 1, INPUT_OWNED = 2 };

typedef struct { UINT RequiredDescriptorCount; UINT64 TemporaryResourceSize; UINT64 PersistentResourceSize; } DmlBindingProperties;
typedef struct { void *Dispatchable; D3D12_CPU_DESCRIPTOR_HANDLE Cpu; D3D12_GPU_DESCRIPTOR_HANDLE Gpu; UINT Size; } DmlBindingTableDesc;
typedef struct { int Type; const void *Desc; } DmlBindingDesc;
typedef struct { ID3D12Resource *Buffer; UINT64 Offset; UINT64 SizeInBytes; } DmlBufferBinding;
typedef struct { UINT BindingCount; const DmlBufferBinding *Bindings; } DmlBufferArrayBinding;
/* DML_GRAPH_DESC and the node and edge descs of a one-node graph (DirectML.h's layouts). */
typedef struct {
  UINT InputCount, OutputCount, NodeCount;
  const DmlBindingDesc *Nodes; /* {Type, Desc} as every DML_GRAPH_NODE_DESC and DML_GRAPH_EDGE_DESC */
  UINT InputEdgeCount;
  const DmlBindingDesc *InputEdges;
  UINT OutputEdgeCount;
  const DmlBindingDesc *OutputEdges;
  UINT IntermediateEdgeCount;
  const DmlBindingDesc *IntermediateEdges;
} DmlGraphDesc;
typedef struct { void *Operator; const char *Name; } DmlOperatorNodeDesc;
typedef struct { UINT GraphInputIndex, ToNodeIndex, ToNodeInputIndex; const char *Name; } DmlInputEdgeDesc;
typedef struct { UINT FromNodeIndex, FromNodeOutputIndex, GraphOutputIndex; const char *Name; } DmlOutputEdgeDesc;

typedef HRESULT(STDMETHODCALLTYPE *CreateOperator_t)(void *, const void *desc, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *CompileOperator_t)(void *, void *op, UINT flags, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *CompileGraph_t)(void *, const DmlGraphDesc *, UINT flags, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *QueryInterface_t)(void *, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *CreateOperatorInitializer_t)(void *, UINT count, void *const *ops, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *CreateCommandRecorder_t)(void *, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *DmlRemovedReason_t)(void *);
typedef HRESULT(STDMETHODCALLTYPE *CreateBindingTable_t)(void *, const DmlBindingTableDesc *, REFIID, void **);
/* A COM method returning a struct returns it through a hidden pointer passed after ``this`` (the MSVC x64 ABI). */
typedef DmlBindingProperties *(STDMETHODCALLTYPE *GetBindingProperties_t)(void *, DmlBindingProperties *);
typedef void(STDMETHODCALLTYPE *BindMany_t)(void *, UINT count, const DmlBindingDesc *);
typedef void(STDMETHODCALLTYPE *BindOne_t)(void *, const DmlBindingDesc *);
typedef HRESULT(STDMETHODCALLTYPE *ResetTable_t)(void *, const DmlBindingTableDesc *);
typedef void(STDMETHODCALLTYPE *RecordDispatch_t)(void *, ID3D12CommandList *, void *dispatchable, void *table);

#define DML_METHOD(object, slot, type) ((type)((void **)*(void **)(object))[slot])
static void dml_release(void *object) {
  if (object) DML_METHOD(object, DML_SLOT_Release, Release_t)(object);
}

/* A binding's place in its device's buffer pool (Shared's pool_*): ``size`` bytes from ``offset`` (aligned to
 * RUNNER_POOL_ALIGNMENT), of which ``bound`` bytes from ``lead`` on are bound to DirectML; for an output, the bytes
 * before and after the binding are its guard regions. */
typedef struct { uint64_t offset, size, bound, lead; int present; } Slice;

/* One operator dispatch of a request (a dispatch, or one of a batch's): what it asks, what it made (DirectML's
 * objects; its buffers are slices of the device's pool, released together whatever step failed) and what each step
 * answered. */
typedef struct {
  uint32_t adapter, flags, request, desc_at;
  unsigned char *arena; /* its descriptor block, its own copy, its pointers relocated */
  void *op, *compiled, *initializer, *init_table, *table;
  Slice inputs[MAX_BINDINGS], outputs[MAX_BINDINGS], temporary, persistent;
  const unsigned char *in_bytes[MAX_BINDINGS], *out_bytes[MAX_BINDINGS]; /* in the request's frame */
  uint32_t n_in, n_out;
  int owned[MAX_BINDINGS]; /* an input bound to the initializer alone (INPUT_OWNED) */
  int kind;                /* the queue type: 0 DIRECT, 1 COMPUTE */
  int graph;               /* compiled as a one-node graph, whose inputs are the bound ones alone, in order */
  HRESULT created, compiled_hr;
  int ready;               /* created and compiled, to be initialized and dispatched */
  int reused;              /* its compiled operator was one compiled before (compiled_key) */
  unsigned char *key;      /* compiled_key: what a compiled operator is kept and found by */
  size_t key_size;
  DmlBindingProperties props, init_props;
  double ms_create, ms_compile;
} Dispatch;

/* 256: DML_TEMPORARY_BUFFER_ALIGNMENT and DML_PERSISTENT_BUFFER_ALIGNMENT, a multiple of
 * DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT (16), so that every binding's offset is one DirectML takes. The pool is made
 * as large as a dispatch needs (at least RUNNER_POOL_MINIMUM, which most of the library's cases fit), never rounded
 * up further: its buffers are the runner's largest allocation, which the harness's estimate of a case's memory counts
 * (ep/memory.py). One over RUNNER_POOL_KEEP is released after its dispatch, so that no later case runs
 * beside a large case's pool. */
enum { RUNNER_POOL_ALIGNMENT = 256, RUNNER_POOL_MINIMUM = 1048576, RUNNER_POOL_KEEP = 67108864 }; /* 1 MiB, 64 MiB */

static void release_dispatch(Dispatch *d) {
  dml_release(d->table);
  dml_release(d->init_table);
  dml_release(d->initializer);
  dml_release(d->compiled);
  dml_release(d->op);
  free(d->arena);
  free(d->key);
}

static HRESULT make_buffer(ID3D12Device *device, D3D12_HEAP_TYPE heap, uint64_t size, D3D12_RESOURCE_STATES state,
                           ID3D12Resource **out) {
  D3D12_HEAP_PROPERTIES props = {0};
  D3D12_RESOURCE_DESC desc = {0};
  props.Type = heap;
  desc.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
  desc.Width = size;
  desc.Height = desc.DepthOrArraySize = desc.MipLevels = 1;
  desc.SampleDesc.Count = 1;
  desc.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
  desc.Flags = heap == D3D12_HEAP_TYPE_DEFAULT ? D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS : D3D12_RESOURCE_FLAG_NONE;
  return ID3D12Device_CreateCommittedResource(device, &props, D3D12_HEAP_FLAG_NONE, &desc, state, NULL,
                                              &IID_ID3D12Resource, (void **)out);
}

static void release_pool(Shared *device) {
  if (device->pool_upload) ID3D12Resource_Release(device->pool_upload);
  if (device->pool_readback) ID3D12Resource_Release(device->pool_readback);
  if (device->pool_gpu) ID3D12Resource_Release(device->pool_gpu);
  device->pool_upload = device->pool_readback = device->pool_gpu = NULL;
  device->upload_map = device->readback_map = NULL;
  device->pool_size = device->staging_size = 0;
}

/* The device's pool: a default-heap buffer of at least ``total`` bytes that DirectML binds slices of, and an upload
 * buffer holding the first ``staged`` of them (the inputs' and outputs' initial bytes) and a readback buffer their
 * final ones, both mapped for the device's life; the temporary and persistent resources lie past ``staged``, on the
 * GPU alone. Making three buffers per binding cost most of a small case's time (a few ms on the H100 under
 * vkd3d-proton), so the pool is kept for the next dispatch, made anew only where one needs more. */
static HRESULT ready_pool(Shared *device, uint64_t total, uint64_t staged) {
  if (device->pool_size >= total && device->staging_size >= staged) return S_OK;
  uint64_t size = total > RUNNER_POOL_MINIMUM ? total : RUNNER_POOL_MINIMUM;
  uint64_t staging = staged > RUNNER_POOL_MINIMUM ? staged : RUNNER_POOL_MINIMUM;
  release_pool(device);
  D3D12_RANGE none = {0, 0};
  HRESULT hr = make_buffer(device->device, D3D12_HEAP_TYPE_DEFAULT, size, D3D12_RESOURCE_STATE_COMMON, &device->pool_gpu);
  if (SUCCEEDED(hr))
    hr = make_buffer(device->device, D3D12_HEAP_TYPE_UPLOAD, staging, D3D12_RESOURCE_STATE_GENERIC_READ, &device->pool_upload);
  if (SUCCEEDED(hr))
    hr = make_buffer(device->device, D3D12_HEAP_TYPE_READBACK, staging, D3D12_RESOURCE_STATE_COPY_DEST, &device->pool_readback);
  if (SUCCEEDED(hr)) hr = ID3D12Resource_Map(device->pool_upload, 0, &none, (void **)&device->upload_map);
  if (SUCCEEDED(hr)) hr = ID3D12Resource_Map(device->pool_readback, 0, NULL, (void **)&device->readback_map);
  if (FAILED(hr)) {
    release_pool(device);
  } else {
    device->pool_size = size;
    device->staging_size = staging;
  }
  return hr;
}

static void transition(ID3D12GraphicsCommandList *list, ID3D12Resource *resource, D3D12_RESOURCE_STATES from,
                       D3D12_RESOURCE_STATES to) {
  D3D12_RESOURCE_BARRIER barrier = {0};
  barrier.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
  barrier.Transition.pResource = resource;
  barrier.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
  barrier.Transition.StateBefore = from;
  barrier.Transition.StateAfter = to;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &barrier);
}

static void uav_barrier(ID3D12GraphicsCommandList *list) {
  D3D12_RESOURCE_BARRIER barrier = {0};
  barrier.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
  ID3D12GraphicsCommandList_ResourceBarrier(list, 1, &barrier);
}

static DmlBufferBinding slice_binding(const Shared *device, const Slice *s) {
  DmlBufferBinding binding = {device->pool_gpu, s->offset + s->lead, s->bound};
  return binding;
}

/* A binding table for ``dispatchable`` over ``count`` descriptors of the device's heap from descriptor ``first``.
 * Each dispatchable recorded in one command list has a range of its own: the GPU reads descriptors when it
 * executes, so a table written over another's before the list runs would change what that one binds. */
static HRESULT make_table(const Shared *device, void *dispatchable, UINT first, UINT count, void **table) {
  ID3D12DescriptorHeap *heap = device->heap;
  UINT step = ID3D12Device_GetDescriptorHandleIncrementSize(device->device, D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);
  DmlBindingTableDesc desc;
  desc.Dispatchable = dispatchable;
  heap->lpVtbl->GetCPUDescriptorHandleForHeapStart(heap, &desc.Cpu);
  heap->lpVtbl->GetGPUDescriptorHandleForHeapStart(heap, &desc.Gpu);
  desc.Cpu.ptr += (SIZE_T)first * step;
  desc.Gpu.ptr += (UINT64)first * step;
  desc.Size = count ? count : 1;
  void *dml = device->dml;
  return DML_METHOD(dml, DML_SLOT_CreateBindingTable, CreateBindingTable_t)(dml, &desc, &IID_IDMLBindingTable_, table);
}

/* A failed step as the reply: its name and HRESULT, with the device's removal reason where it was removed. */
static void send_step_failed(const Shared *device, const char *step, HRESULT hr, int may_forget) {
  char text[320];
  HRESULT removed = ID3D12Device_GetDeviceRemovedReason(device->device);
  HRESULT dml_removed = DML_METHOD(device->dml, DML_SLOT_GetDeviceRemovedReason, DmlRemovedReason_t)(device->dml);
  int n = snprintf(text, sizeof text, "%s failed: HRESULT 0x%08lX", step, (unsigned long)hr);
  if (FAILED(removed) && n > 0 && (size_t)n < sizeof text)
    n += snprintf(text + n, sizeof text - (size_t)n, "; the D3D12 device was removed (DXGI_ERROR_DEVICE_REMOVED, reason 0x%08lX)",
                  (unsigned long)removed);
  else if (FAILED(dml_removed) && n > 0 && (size_t)n < sizeof text)
    n += snprintf(text + n, sizeof text - (size_t)n, "; DirectML removed its device (reason 0x%08lX: a misuse of its API)",
                  (unsigned long)dml_removed);
  send_error(ST_D3D, text);
  if (may_forget && (FAILED(removed) || FAILED(dml_removed))) forget_device(device); /* the next request makes a new one */
}

/* The device's reused dispatch objects (Shared), made on first use; the heap grown to ``descriptors`` where it is
 * smaller. The command list of queue type ``kind`` (0 DIRECT, 1 COMPUTE) is reset and open on return. */
static HRESULT ready_device(Shared *device, UINT descriptors, int kind, const char **step) {
  const D3D12_COMMAND_LIST_TYPE type = kind ? D3D12_COMMAND_LIST_TYPE_COMPUTE : D3D12_COMMAND_LIST_TYPE_DIRECT;
  ID3D12Device *dev = device->device;
  HRESULT hr = S_OK;
  if (!device->heap || device->heap_size < descriptors) {
    UINT size = descriptors > 1024 ? descriptors : 1024;
    D3D12_DESCRIPTOR_HEAP_DESC heap_desc = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, size,
                                            D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};
    if (device->heap) ID3D12DescriptorHeap_Release(device->heap);
    device->heap = NULL;
    *step = "CreateDescriptorHeap";
    hr = ID3D12Device_CreateDescriptorHeap(dev, &heap_desc, &IID_ID3D12DescriptorHeap, (void **)&device->heap);
    if (FAILED(hr)) return hr;
    device->heap_size = size;
  }
  if (kind && !device->compute_queue) {
    D3D12_COMMAND_QUEUE_DESC queue_desc = {0};
    queue_desc.Type = D3D12_COMMAND_LIST_TYPE_COMPUTE;
    *step = "CreateCommandQueue (COMPUTE)";
    hr = ID3D12Device_CreateCommandQueue(dev, &queue_desc, &IID_ID3D12CommandQueue, (void **)&device->compute_queue);
    if (FAILED(hr)) return hr;
  }
  if (!device->allocators[kind]) {
    *step = "CreateCommandAllocator";
    hr = ID3D12Device_CreateCommandAllocator(dev, type, &IID_ID3D12CommandAllocator, (void **)&device->allocators[kind]);
    if (FAILED(hr)) return hr;
  }
  if (!device->lists[kind]) {
    *step = "CreateCommandList";
    hr = ID3D12Device_CreateCommandList(dev, 0, type, device->allocators[kind], NULL, &IID_ID3D12GraphicsCommandList,
                                        (void **)&device->lists[kind]);
    if (SUCCEEDED(hr)) hr = ID3D12GraphicsCommandList_Close(device->lists[kind]); /* made open: closed like a used one */
    if (FAILED(hr)) return hr;
  }
  if (!device->fence) {
    *step = "CreateFence";
    hr = ID3D12Device_CreateFence(dev, 0, D3D12_FENCE_FLAG_NONE, &IID_ID3D12Fence, (void **)&device->fence);
    if (FAILED(hr)) return hr;
    device->event = CreateEventA(NULL, FALSE, FALSE, NULL);
    if (!device->event) die("CreateEvent failed");
  }
  if (!device->recorder) {
    *step = "CreateCommandRecorder";
    hr = DML_METHOD(device->dml, DML_SLOT_CreateCommandRecorder, CreateCommandRecorder_t)(
        device->dml, &IID_IDMLCommandRecorder_, &device->recorder);
    if (FAILED(hr)) return hr;
  }
  *step = "Reset (the command allocator)"; /* the last list it recorded has finished: dispatch waits for each */
  hr = ID3D12CommandAllocator_Reset(device->allocators[kind]);
  if (SUCCEEDED(hr)) hr = ID3D12GraphicsCommandList_Reset(device->lists[kind], device->allocators[kind], NULL);
  device->list_open = SUCCEEDED(hr);
  device->open_kind = kind;
  return hr;
}

/* One dispatch's recording into ``list``: its initializer (binding tables from descriptor ``*first`` on, which
 * moves past them), a UAV barrier, the operator, a UAV barrier. Only what each dispatchable asks for is bound:
 * DirectML removes its device on a binding it did not ask for (the Bind* methods return nothing, so a misuse is
 * reported that way). */
static HRESULT record_one(Shared *device, Dispatch *d, ID3D12GraphicsCommandList *list, UINT *first, const char **step) {
  void *recorder = device->recorder;
  const DmlBindingProperties *props = &d->props, *init_props = &d->init_props;
  UINT init_count = init_props->RequiredDescriptorCount ? init_props->RequiredDescriptorCount : 1;
  UINT op_count = props->RequiredDescriptorCount ? props->RequiredDescriptorCount : 1;

  /* The initializer: the persistent resource is its output, its temporary its scratch. */
  DmlBufferBinding persistent = slice_binding(device, &d->persistent), temporary = slice_binding(device, &d->temporary);
  DmlBindingDesc persistent_desc = {DML_BINDING_BUFFER, &persistent}, temporary_desc = {DML_BINDING_BUFFER, &temporary};
  *step = "CreateBindingTable (initializer)";
  HRESULT hr = make_table(device, d->initializer, *first, init_count, &d->init_table);
  if (FAILED(hr)) return hr;
  if (init_props->TemporaryResourceSize)
    DML_METHOD(d->init_table, DML_SLOT_BindTemporaryResource, BindOne_t)(d->init_table, &temporary_desc);
  /* Its inputs, where any is owned by DirectML: one buffer array over the dispatchable's inputs, the owned ones bound
   * (their bytes are the persistent resource's from here), the others empty. */
  DmlBufferBinding init_inputs[MAX_BINDINGS];
  UINT n_init = 0, any_owned = 0;
  for (uint32_t i = 0; i < d->n_in; i++) {
    if (d->graph && !d->inputs[i].present) continue; /* a graph's inputs are the bound ones */
    DmlBufferBinding none = {NULL, 0, 0};
    init_inputs[n_init++] = d->owned[i] ? slice_binding(device, &d->inputs[i]) : none;
    any_owned |= (UINT)d->owned[i];
  }
  DmlBufferArrayBinding init_array = {n_init, init_inputs};
  DmlBindingDesc init_inputs_desc = {DML_BINDING_BUFFER_ARRAY, &init_array};
  if (any_owned) DML_METHOD(d->init_table, DML_SLOT_BindInputs, BindMany_t)(d->init_table, 1, &init_inputs_desc);
  /* The initializer's outputs: the operator's persistent resource, or an empty binding where it has none. */
  DmlBindingDesc no_persistent = {DML_BINDING_NONE, NULL};
  DML_METHOD(d->init_table, DML_SLOT_BindOutputs, BindMany_t)(d->init_table, 1,
                                                              props->PersistentResourceSize ? &persistent_desc : &no_persistent);
  DML_METHOD(recorder, DML_SLOT_RecordDispatch, RecordDispatch_t)(recorder, (ID3D12CommandList *)list, d->initializer,
                                                                 d->init_table);
  uav_barrier(list);

  /* The operator: its inputs and outputs as the case laid them out (an absent optional tensor, and one DirectML
   * owns: NONE; a graph has no input for an absent one). */
  DmlBufferBinding in_buffers[MAX_BINDINGS], out_buffers[MAX_BINDINGS];
  DmlBindingDesc in_descs[MAX_BINDINGS], out_descs[MAX_BINDINGS];
  UINT n_bound = 0;
  for (uint32_t i = 0; i < d->n_in; i++) {
    if (d->graph && !d->inputs[i].present) continue;
    int bound = d->inputs[i].present && !d->owned[i];
    in_buffers[n_bound] = slice_binding(device, &d->inputs[i]);
    in_descs[n_bound].Type = bound ? DML_BINDING_BUFFER : DML_BINDING_NONE;
    in_descs[n_bound].Desc = bound ? &in_buffers[n_bound] : NULL;
    n_bound++;
  }
  for (uint32_t i = 0; i < d->n_out; i++) {
    out_buffers[i] = slice_binding(device, &d->outputs[i]);
    out_descs[i].Type = DML_BINDING_BUFFER;
    out_descs[i].Desc = &out_buffers[i];
  }
  *step = "CreateBindingTable (operator)";
  hr = make_table(device, d->compiled, *first + init_count, op_count, &d->table);
  if (FAILED(hr)) return hr;
  *first += init_count + op_count;
  DML_METHOD(d->table, DML_SLOT_BindInputs, BindMany_t)(d->table, n_bound, in_descs);
  DML_METHOD(d->table, DML_SLOT_BindOutputs, BindMany_t)(d->table, d->n_out, out_descs);
  if (props->TemporaryResourceSize) DML_METHOD(d->table, DML_SLOT_BindTemporaryResource, BindOne_t)(d->table, &temporary_desc);
  if (props->PersistentResourceSize) DML_METHOD(d->table, DML_SLOT_BindPersistentResource, BindOne_t)(d->table, &persistent_desc);
  DML_METHOD(recorder, DML_SLOT_RecordDispatch, RecordDispatch_t)(recorder, (ID3D12CommandList *)list, d->compiled,
                                                                 d->table);
  uav_barrier(list);
  return S_OK;
}

/* Record, submit and wait for: every ready dispatch's bindings' initial bytes uploaded (the pool's first ``staged``
 * bytes), then each one's initializer and operator in order, UAV barriers between them, all in one command list on
 * the dispatches' queue, the bindings read back, one fence wait. The pool buffer is in COMMON before and after;
 * ``*submitted`` says whether the list reached the queue. */
static HRESULT record_and_wait(Shared *device, Dispatch *ds, uint32_t n, uint64_t staged, const char **step,
                               int *submitted) {
  UINT descriptors = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!ds[i].ready) continue;
    descriptors += ds[i].init_props.RequiredDescriptorCount ? ds[i].init_props.RequiredDescriptorCount : 1;
    descriptors += ds[i].props.RequiredDescriptorCount ? ds[i].props.RequiredDescriptorCount : 1;
  }
  int kind = ds[0].kind;
  HRESULT hr = ready_device(device, descriptors, kind, step);
  if (FAILED(hr)) return hr;
  ID3D12GraphicsCommandList *list = device->lists[kind];
  ID3D12CommandQueue *queue = kind ? device->compute_queue : device->queue;
  transition(list, device->pool_gpu, D3D12_RESOURCE_STATE_COMMON, D3D12_RESOURCE_STATE_COPY_DEST);
  ID3D12GraphicsCommandList_CopyBufferRegion(list, device->pool_gpu, 0, device->pool_upload, 0, staged);
  transition(list, device->pool_gpu, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
  ID3D12GraphicsCommandList_SetDescriptorHeaps(list, 1, &device->heap);
  UINT first = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!ds[i].ready) continue;
    hr = record_one(device, &ds[i], list, &first, step);
    if (FAILED(hr)) return hr;
  }
  transition(list, device->pool_gpu, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
  ID3D12GraphicsCommandList_CopyBufferRegion(list, device->pool_readback, 0, device->pool_gpu, 0, staged);
  transition(list, device->pool_gpu, D3D12_RESOURCE_STATE_COPY_SOURCE, D3D12_RESOURCE_STATE_COMMON);
  *step = "Close (the command list)";
  hr = ID3D12GraphicsCommandList_Close(list);
  device->list_open = 0;
  if (FAILED(hr)) return hr;
  ID3D12CommandList *lists[1] = {(ID3D12CommandList *)list};
  ID3D12CommandQueue_ExecuteCommandLists(queue, 1, lists);
  *submitted = 1; /* from here a failure leaves work on the GPU that nothing waits for: the device is forgotten */
  *step = "Signal (the queue)";
  hr = ID3D12CommandQueue_Signal(queue, device->fence, ++device->fence_value);
  if (FAILED(hr)) return hr;
  *step = "SetEventOnCompletion";
  hr = ID3D12Fence_SetEventOnCompletion(device->fence, device->fence_value, device->event);
  if (FAILED(hr)) return hr;
  WaitForSingleObject(device->event, INFINITE); /* a GPU that never finishes is the harness's --case-timeout to end */
  *step = "the dispatch (the device's state after it)";
  return ID3D12Device_GetDeviceRemovedReason(device->device);
}

/* The dispatch's operator compiled as a one-node graph (IDMLDevice1::CompileGraph): a graph input for each bound
 * input, in order, to that input of the node, and a graph output for each of the node's outputs. Its HRESULT is
 * what the reply gives as the compile's. */
static HRESULT compile_graph(void *dml, Dispatch *d, UINT flags) {
  void *dml1 = NULL;
  HRESULT hr = DML_METHOD(dml, DML_SLOT_QueryInterface, QueryInterface_t)(dml, &IID_IDMLDevice1_, &dml1);
  if (FAILED(hr)) return hr;
  DmlOperatorNodeDesc node = {d->op, "node"};
  DmlBindingDesc nodes[1] = {{DML_GRAPH_NODE_TYPE_OPERATOR, &node}};
  DmlInputEdgeDesc inputs[MAX_BINDINGS];
  DmlOutputEdgeDesc outputs[MAX_BINDINGS];
  DmlBindingDesc input_edges[MAX_BINDINGS], output_edges[MAX_BINDINGS];
  UINT n_inputs = 0;
  for (uint32_t i = 0; i < d->n_in; i++) {
    if (!d->inputs[i].present) continue;
    DmlInputEdgeDesc edge = {n_inputs, 0, i, NULL};
    inputs[n_inputs] = edge;
    input_edges[n_inputs].Type = DML_GRAPH_EDGE_TYPE_INPUT;
    input_edges[n_inputs].Desc = &inputs[n_inputs];
    n_inputs++;
  }
  for (uint32_t i = 0; i < d->n_out; i++) {
    DmlOutputEdgeDesc edge = {0, i, i, NULL};
    outputs[i] = edge;
    output_edges[i].Type = DML_GRAPH_EDGE_TYPE_OUTPUT;
    output_edges[i].Desc = &outputs[i];
  }
  DmlGraphDesc graph = {n_inputs, d->n_out, 1, nodes, n_inputs, input_edges, d->n_out, output_edges, 0, NULL};
  hr = DML_METHOD(dml1, DML_SLOT_CompileGraph, CompileGraph_t)(dml1, &graph, flags, &IID_IDMLCompiledOperator_,
                                                                &d->compiled);
  dml_release(dml1);
  return hr;
}

/* The slice after ``at`` for ``size`` bytes; the next free offset is returned through ``at``. */
static Slice place(uint64_t *at, uint64_t size, uint64_t bound, int present) {
  Slice s = {*at, size, bound, 0, present};
  if (present) *at += (size + RUNNER_POOL_ALIGNMENT - 1) / RUNNER_POOL_ALIGNMENT * RUNNER_POOL_ALIGNMENT;
  return s;
}

/* One dispatch of a request read from ``f`` (protocol.py says the fields): its descriptor block copied and its
 * pointers relocated, its inputs and outputs placed in the pool from ``*at`` on. */
static void read_dispatch(Frame *f, Dispatch *d, uint64_t *at) {
  memset(d, 0, sizeof *d);
  d->adapter = get_u32(f);
  d->flags = get_u32(f);
  d->request = get_u32(f);
  uint64_t arena_size;
  const unsigned char *arena_bytes = get_bytes(f, &arena_size);
  d->arena = checked_alloc((size_t)arena_size); /* its own copy, 16-byte aligned, patched below */
  memcpy(d->arena, arena_bytes, (size_t)arena_size);
  uint32_t n_reloc = get_u32(f);
  /* compiled_key: the execution flags, the compile, and the descriptor as sent (its block before relocation, its
   * pointer fields and where its desc is): the same bytes describe the same operator. */
  const unsigned char *relocs = f->data + f->at;
  if ((uint64_t)n_reloc * 8 > f->size - f->at) die("a descriptor's pointer fields past the request's end");
  d->key_size = 12 + (size_t)n_reloc * 8 + (size_t)arena_size;
  d->key = checked_alloc(d->key_size);
  uint32_t graph_bit = (d->request & DISPATCH_COMPILE_GRAPH) != 0;
  memcpy(d->key, &d->flags, 4);
  memcpy(d->key + 4, &graph_bit, 4);
  memcpy(d->key + 12, relocs, (size_t)n_reloc * 8);
  memcpy(d->key + 12 + (size_t)n_reloc * 8, arena_bytes, (size_t)arena_size);
  for (uint32_t i = 0; i < n_reloc; i++) {
    uint32_t where = get_u32(f), size = get_u32(f); /* a pointer field, and the size of what it points to */
    uint64_t target;
    if (where % 8 || (uint64_t)where + 8 > arena_size) die("a descriptor pointer outside its block");
    memcpy(&target, d->arena + where, 8);
    if (target > arena_size || size > arena_size - target) die("a descriptor pointer to outside its block");
    void *address = d->arena + target;
    memcpy(d->arena + where, &address, 8);
  }
  d->desc_at = get_u32(f);
  if (d->desc_at % 8 || (uint64_t)d->desc_at + 16 > arena_size) die("the operator desc outside its block");
  memcpy(d->key + 8, &d->desc_at, 4);
  d->n_in = get_u32(f);
  if (d->n_in > MAX_BINDINGS) die("too many inputs");
  for (uint32_t i = 0; i < d->n_in; i++) {
    uint32_t binding = get_u32(f);
    uint64_t lead = get_u64(f), bound = get_u64(f), size;
    d->in_bytes[i] = get_bytes(f, &size);
    if (binding > INPUT_OWNED) die("an input bound in no known way");
    int present = binding != INPUT_UNBOUND;
    if (present && (lead % 16 || lead > size || size - lead < bound)) die("an input binding outside its buffer");
    d->inputs[i] = place(at, size, bound, present);
    d->inputs[i].lead = lead;
    d->owned[i] = binding == INPUT_OWNED;
  }
  d->n_out = get_u32(f);
  if (d->n_out > MAX_BINDINGS) die("too many outputs");
  for (uint32_t i = 0; i < d->n_out; i++) {
    uint64_t lead = get_u64(f), bound = get_u64(f), size;
    d->out_bytes[i] = get_bytes(f, &size);
    if (lead % 16 || lead > size || size - lead < bound) die("an output binding outside its buffer");
    d->outputs[i] = place(at, size, bound, 1);
    d->outputs[i].lead = lead;
  }
  d->kind = (d->request & DISPATCH_COMPUTE_QUEUE) != 0;
  d->graph = (d->request & DISPATCH_COMPILE_GRAPH) != 0;
}

/* The device's compiled operator for a descriptor of these exact bytes, with a reference of the caller's; NULL
 * where none is kept. */
static void *kept_compiled(Shared *device, const Dispatch *d) {
  for (int k = 0; k < RUNNER_COMPILED_KEEP; k++) {
    if (device->compiled[k].compiled && device->compiled[k].size == d->key_size &&
        memcmp(device->compiled[k].key, d->key, d->key_size) == 0) {
      void *kept = device->compiled[k].compiled;
      DML_METHOD(kept, DML_SLOT_AddRef, Release_t)(kept);
      return kept;
    }
  }
  return NULL;
}

/* A compiled operator kept for reuse (a reference of the device's), the oldest given up where all slots are taken. */
static void keep_compiled(Shared *device, Dispatch *d) {
  uint32_t k = device->compiled_next;
  device->compiled_next = (k + 1) % RUNNER_COMPILED_KEEP;
  dml_release(device->compiled[k].compiled);
  free(device->compiled[k].key);
  DML_METHOD(d->compiled, DML_SLOT_AddRef, Release_t)(d->compiled);
  device->compiled[k].compiled = d->compiled;
  device->compiled[k].key = d->key; /* the key goes with the kept operator */
  device->compiled[k].size = d->key_size;
  d->key = NULL;
}

/* CreateOperator, and unless only that is asked, the compile (CompileOperator, or CompileGraph): each HRESULT
 * kept; ``ready`` where both succeeded and a dispatch is asked. A descriptor compiled before on the device takes
 * that compiled operator, asking neither (``reused``), unless the request says DISPATCH_NO_REUSE. */
static void create_and_compile(Shared *device, Dispatch *d) {
  void *dml = device->dml;
  int reuse = !(d->request & (DISPATCH_NO_REUSE | DISPATCH_CREATE_ONLY));
  if (reuse && (d->compiled = kept_compiled(device, d)) != NULL) {
    d->created = d->compiled_hr = S_OK;
    d->ready = d->reused = 1;
    return;
  }
  double t0 = now_ms();
  d->created = DML_METHOD(dml, DML_SLOT_CreateOperator, CreateOperator_t)(dml, d->arena + d->desc_at, &IID_IDMLOperator_, &d->op);
  double t1 = now_ms();
  d->ms_create = t1 - t0;
  if (FAILED(d->created) || (d->request & DISPATCH_CREATE_ONLY)) return;
  if (d->graph)
    d->compiled_hr = compile_graph(dml, d, d->flags);
  else
    d->compiled_hr = DML_METHOD(dml, DML_SLOT_CompileOperator, CompileOperator_t)(dml, d->op, d->flags, &IID_IDMLCompiledOperator_,
                                                                                  &d->compiled);
  d->ms_compile = now_ms() - t1;
  d->ready = SUCCEEDED(d->compiled_hr);
  if (d->ready && reuse) keep_compiled(device, d);
}

/* A ready dispatch's initializer and binding properties; its temporary and persistent resources placed in the pool
 * from ``*at`` on. */
static HRESULT initialize(void *dml, Dispatch *d, uint64_t *at) {
  HRESULT hr = DML_METHOD(dml, DML_SLOT_CreateOperatorInitializer, CreateOperatorInitializer_t)(
      dml, 1, &d->compiled, &IID_IDMLOperatorInitializer_, &d->initializer);
  if (FAILED(hr)) return hr;
  DML_METHOD(d->compiled, DML_SLOT_GetBindingProperties, GetBindingProperties_t)(d->compiled, &d->props);
  DML_METHOD(d->initializer, DML_SLOT_GetBindingProperties, GetBindingProperties_t)(d->initializer, &d->init_props);
  uint64_t temporary = d->props.TemporaryResourceSize > d->init_props.TemporaryResourceSize
                           ? d->props.TemporaryResourceSize : d->init_props.TemporaryResourceSize;
  d->temporary = place(at, temporary, temporary, temporary > 0);
  d->persistent = place(at, d->props.PersistentResourceSize, d->props.PersistentResourceSize, d->props.PersistentResourceSize > 0);
  return S_OK;
}

/* A dispatch's answer: CreateOperator's HRESULT; where it succeeded and more was asked, the compile's; where that
 * succeeded, each output buffer's bytes (from the readback map), the binding properties and the milliseconds. */
static void put_dispatch(Out *o, const Shared *device, const Dispatch *d, double ms_execute) {
  put_u32(o, (uint32_t)d->created);
  if (FAILED(d->created) || (d->request & DISPATCH_CREATE_ONLY)) return;
  put_u32(o, (uint32_t)d->compiled_hr);
  if (!d->ready) return;
  put_u32(o, d->n_out);
  for (uint32_t i = 0; i < d->n_out; i++) put_ref(o, device->readback_map + d->outputs[i].offset, d->outputs[i].size);
  put_u32(o, d->props.RequiredDescriptorCount);
  put_u64(o, d->props.TemporaryResourceSize);
  put_u64(o, d->props.PersistentResourceSize);
  char ms[96];
  snprintf(ms, sizeof ms, "%.3f %.3f %.3f %d", d->ms_create, d->ms_compile, ms_execute, d->reused);
  put_str(o, ms);
}

/* dispatch (one DML operator descriptor) and dispatch_batch (several, in one command list): each created on the
 * adapter's shared DirectML device and compiled with its execution flags; those that compiled initialized and
 * dispatched on their buffers, in order, one submission and one fence wait for all (batch_size of them). A D3D12 or
 * DirectML step that fails after the compiles fails the whole request (status ST_D3D). protocol.py says the fields. */
static void run_dispatches(Frame *f, uint32_t batch_size, int batch) {
  if (batch_size == 0 || batch_size > DISPATCH_BATCH_MAX) die("a batch of no dispatch, or of too many");
  Dispatch *ds = checked_alloc(batch_size * sizeof *ds);
  uint64_t at = 0;
  for (uint32_t i = 0; i < batch_size; i++) {
    read_dispatch(f, &ds[i], &at);
    if (ds[i].adapter != ds[0].adapter || ds[i].kind != ds[0].kind) die("a batch's dispatches on two adapters or queues");
  }
  uint64_t staged = at ? at : RUNNER_POOL_ALIGNMENT; /* the inputs and outputs, placed first */
  char why[160];
  Shared *device = shared_device((int)ds[0].adapter, why, sizeof why);
  if (!device) {
    send_error(ST_EP, why);
    for (uint32_t i = 0; i < batch_size; i++) release_dispatch(&ds[i]);
    free(ds);
    return;
  }
  void *dml = device->dml;
  int ready = 0;
  for (uint32_t i = 0; i < batch_size; i++) {
    create_and_compile(device, &ds[i]);
    ready += ds[i].ready;
  }
  double compiled = now_ms();
  HRESULT hr = S_OK;
  const char *step = "CreateOperatorInitializer";
  int submitted = 0;
  for (uint32_t i = 0; i < batch_size && SUCCEEDED(hr); i++)
    if (ds[i].ready) hr = initialize(dml, &ds[i], &at);
  if (ready && SUCCEEDED(hr)) {
    step = "CreateCommittedResource (the buffer pool)";
    hr = ready_pool(device, at ? at : RUNNER_POOL_ALIGNMENT, staged);
    if (SUCCEEDED(hr)) {
      for (uint32_t k = 0; k < batch_size; k++) {
        Dispatch *d = &ds[k];
        if (!d->ready) continue;
        for (uint32_t i = 0; i < d->n_in; i++)
          if (d->inputs[i].present) memcpy(device->upload_map + d->inputs[i].offset, d->in_bytes[i], (size_t)d->inputs[i].size);
        for (uint32_t i = 0; i < d->n_out; i++)
          memcpy(device->upload_map + d->outputs[i].offset, d->out_bytes[i], (size_t)d->outputs[i].size);
      }
      hr = record_and_wait(device, ds, batch_size, staged, &step, &submitted);
    }
  }
  double ran = now_ms();
  if (FAILED(hr)) {
    if (submitted) {
      /* Its work may still run: nothing may be released or reused under it, so the device is abandoned (its
       * objects and these dispatches' kept, a leak bounded by one device per failed submission) and the next
       * request makes a new one. */
      send_step_failed(device, step, hr, 0);
      memset(device, 0, sizeof *device);
      for (uint32_t i = 0; i < batch_size; i++) free(ds[i].arena);
      free(ds);
      return;
    }
    if (device->list_open) ID3D12GraphicsCommandList_Close(device->lists[device->open_kind]); /* reset next time */
    device->list_open = 0;
    send_step_failed(device, step, hr, 1);
  } else {
    Out o = {0};
    put_u8(&o, ST_OK);
    if (batch) put_u32(&o, batch_size);
    for (uint32_t i = 0; i < batch_size; i++) put_dispatch(&o, device, &ds[i], ran - compiled);
    send_frame(&o);
  }
  for (uint32_t i = 0; i < batch_size; i++) release_dispatch(&ds[i]);
  free(ds);
  if (device->dml && device->pool_size > RUNNER_POOL_KEEP) release_pool(device); /* the outputs were sent from it */
}

static void dispatch(Frame *f) { run_dispatches(f, 1, 0); }

static void dispatch_batch(Frame *f) { run_dispatches(f, get_u32(f), 1); }

int main(int argc, char **argv) {
  /* Keep the protocol's stdout for ourselves; everything else that writes to stdout goes to stderr. */
  HANDLE process = GetCurrentProcess();
  in_handle = GetStdHandle(STD_INPUT_HANDLE);
  if (!DuplicateHandle(process, GetStdHandle(STD_OUTPUT_HANDLE), process, &out_handle, 0, FALSE, DUPLICATE_SAME_ACCESS))
    die("cannot take stdout");
  SetStdHandle(STD_OUTPUT_HANDLE, GetStdHandle(STD_ERROR_HANDLE));
  _dup2(_fileno(stderr), _fileno(stdout));
  setvbuf(stderr, NULL, _IONBF, 0);

  /* Profiles go to the folder named by the first argument (else the current one). The name holds the start time as
   * well as the process id: runners of several Wine prefixes share the staged folder, and each wineserver numbers
   * its processes from the same small ids, so two runners could otherwise write one profile file. */
  LARGE_INTEGER started;
  QueryPerformanceCounter(&started);
  swprintf(profile_prefix, MAX_PATH, L"%hs\\dmlrunner_%lu_%llx", argc > 1 ? argv[1] : ".",
           (unsigned long)GetCurrentProcessId(), (unsigned long long)started.QuadPart);

  HMODULE dll = LoadLibraryA("onnxruntime.dll");
  if (!dll) {
    char b[96];
    snprintf(b, sizeof b, "LoadLibrary onnxruntime.dll failed: error %lu", (unsigned long)GetLastError());
    die(b);
  }
  const OrtApiBase *(__stdcall *get_base)(void) = (const OrtApiBase *(__stdcall *)(void))proc_address(dll, "OrtGetApiBase");
  if (!get_base) die("onnxruntime.dll has no OrtGetApiBase");
  ort = get_base()->GetApi(RUNNER_ORT_API_VERSION);
  if (!ort) die("onnxruntime.dll does not serve the ORT API version the runner needs");
  if (ort_failed(ORT(CreateEnv)(3, "dmlrunner", &env), ST_ORT)) die("CreateEnv failed");
  if (ort_failed(ORT(CreateCpuMemoryInfo)(1 /* OrtArenaAllocator */, 0 /* OrtMemTypeDefault */, &cpu_memory), ST_ORT)) die("CreateCpuMemoryInfo failed");

  /* Ready: the first frame says which onnxruntime answered. */
  {
    Out o = {0};
    put_u8(&o, ST_OK);
    put_str(&o, get_base()->GetVersionString());
    send_frame(&o);
  }
  for (;;) {
    uint32_t size;
    if (!read_exact(&size, 4)) break; /* the harness closed our stdin: done */
    Frame f = {malloc(size ? size : 1), size, 0};
    if (!f.data) die("out of memory");
    if (size && !read_exact(f.data, size)) die("input ended inside a frame");
    uint8_t op;
    need(&f, 1);
    op = f.data[f.at++];
    switch (op) {
      case OP_DESCRIBE: describe(&f); break;
      case OP_OPEN: open_session(&f); break;
      case OP_RUN: run(&f); break;
      case OP_CLOSE: close_session(&f); break;
      case OP_DISPATCH: dispatch(&f); break;
      case OP_DISPATCH_BATCH: dispatch_batch(&f); break;
      default: die("unknown request");
    }
    free(f.data);
  }
  ExitProcess(0); /* no teardown: the device's release is the driver's business at exit */
}
