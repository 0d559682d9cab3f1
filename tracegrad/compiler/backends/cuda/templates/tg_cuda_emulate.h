/* tracegrad's CUDA emulation: lets a generated .cu file compile with a host C++ compiler
 * (g++ -std=c++17 -DTG_CUDA_EMULATE) and run on the CPU, so the CUDA renderer is tested on
 * machines without a GPU (TRACEGRAD_CUDA_EMULATE=1; docs/cuda.md).
 *
 * The model, kept close to what a GPU guarantees so that bugs a GPU would show show here too:
 * - a launch runs the blocks of its grid one after another; within a block every CUDA thread
 *   is a host thread of its own, so __syncthreads is a real barrier and a missing one is a
 *   real race (the results come out wrong, as on a GPU), not something a sequential loop hides;
 * - __shared__ is a static variable of the kernel: one instance, which the blocks of a launch
 *   use in turn (blocks never run at once here and launches are serialized by one lock);
 * - warp shuffles exchange values through a per-thread slot and a barrier per warp, so every
 *   lane of a warp must take part (the full-mask shuffles the generated code uses);
 * - device memory is host memory: cudaMalloc is malloc, every cudaMemcpy kind is memcpy.
 * It is a testing mode, slow by design (threads are started per launch, so that no thread
 * outlives the call into a library that cffi may unload later).
 */
#ifndef TG_CUDA_EMULATE_H
#define TG_CUDA_EMULATE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};

static const int warpSize = 32;

namespace tg_emu {

/* A reusable barrier for a fixed number of threads. A wait that lasts longer than any kernel
 * of the tests could (a __syncthreads some thread of the block never reaches) aborts with a
 * message instead of hanging the process. */
class Barrier {
  public:
    void reset(unsigned count) { count_ = count; waiting_ = 0; }
    void wait() {
        std::unique_lock<std::mutex> lock(m_);
        unsigned long long gen = generation_;
        if (++waiting_ == count_) {
            waiting_ = 0;
            generation_++;
            cv_.notify_all();
            return;
        }
        if (!cv_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != gen; })) {
            fprintf(stderr, "tracegrad CUDA emulation: a barrier waited 60 s; a __syncthreads or "
                            "warp shuffle that not every thread of the block (warp) reaches\n");
            abort();
        }
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    unsigned count_ = 1, waiting_ = 0;
    unsigned long long generation_ = 0;
};

/* What the threads of one launch share. */
struct Launch {
    Barrier block;                 /* __syncthreads */
    std::vector<Barrier> warps;    /* one per warp: shuffles, __syncwarp */
    std::vector<uint64_t> slots;   /* one per thread: the value a shuffle offers */
    unsigned nthreads;
    explicit Launch(unsigned n) : warps((n + 31) / 32), slots(n), nthreads(n) {
        block.reset(n);
        for (unsigned w = 0; w < warps.size(); w++)
            warps[w].reset(n - 32 * w < 32 ? n - 32 * w : 32);
    }
};

inline thread_local uint3 thread_idx;
inline thread_local uint3 block_idx;
inline thread_local dim3 block_dim;
inline thread_local dim3 grid_dim;
inline thread_local Launch *current = nullptr;

inline std::mutex &launch_lock() {
    static std::mutex m;
    return m;
}

inline std::mutex &atomic_lock() {
    static std::mutex m;
    return m;
}

inline unsigned linear_tid() {
    return thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z);
}

/* kernel<<<grid, block>>>(args...): every block in order, each run by block.x*block.y*block.z
 * host threads that all pass a barrier at the end of the block (its shared memory is then
 * free for the next block). */
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    std::lock_guard<std::mutex> serial(launch_lock());
    const unsigned n = block.x * block.y * block.z;
    if (n == 0 || grid.x * grid.y * grid.z == 0) return;
    Launch shared(n);
    auto body = [&](unsigned t) {
        current = &shared;
        thread_idx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
        block_dim = block;
        grid_dim = grid;
        for (unsigned bz = 0; bz < grid.z; bz++)
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned bx = 0; bx < grid.x; bx++) {
                    block_idx = {bx, by, bz};
                    kernel(args...);
                    shared.block.wait();
                }
        current = nullptr;
    };
    std::vector<std::thread> threads;
    threads.reserve(n - 1);
    for (unsigned t = 1; t < n; t++) threads.emplace_back(body, t);
    body(0);
    for (auto &th : threads) th.join();
}

template <class T>
T shuffle(T v, unsigned src_lane_of(unsigned lane, unsigned width, unsigned arg), unsigned arg) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a value wider than 8 bytes");
    Launch &l = *current;
    const unsigned t = linear_tid(), w = t / 32, lane = t % 32;
    const unsigned width = l.nthreads - 32 * w < 32 ? l.nthreads - 32 * w : 32;
    memcpy(&l.slots[t], &v, sizeof(T));
    l.warps[w].wait(); /* every lane has offered its value */
    T out;
    memcpy(&out, &l.slots[32 * w + src_lane_of(lane, width, arg)], sizeof(T));
    l.warps[w].wait(); /* every lane has read before any offers the next value */
    return out;
}

inline unsigned lane_down(unsigned lane, unsigned width, unsigned d) { return lane + d < width ? lane + d : lane; }
inline unsigned lane_up(unsigned lane, unsigned, unsigned d) { return lane >= d ? lane - d : lane; }
inline unsigned lane_xor(unsigned lane, unsigned width, unsigned m) { return (lane ^ m) < width ? lane ^ m : lane; }
inline unsigned lane_idx(unsigned, unsigned width, unsigned s) { return s % width; }

}  // namespace tg_emu

#define threadIdx (::tg_emu::thread_idx)
#define blockIdx (::tg_emu::block_idx)
#define blockDim (::tg_emu::block_dim)
#define gridDim (::tg_emu::grid_dim)

inline void __syncthreads() { tg_emu::current->block.wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { tg_emu::current->warps[tg_emu::linear_tid() / 32].wait(); }
inline void __threadfence() {}

template <class T> T __shfl_down_sync(unsigned, T v, unsigned d, int = 32) { return tg_emu::shuffle(v, tg_emu::lane_down, d); }
template <class T> T __shfl_up_sync(unsigned, T v, unsigned d, int = 32) { return tg_emu::shuffle(v, tg_emu::lane_up, d); }
template <class T> T __shfl_xor_sync(unsigned, T v, unsigned m, int = 32) { return tg_emu::shuffle(v, tg_emu::lane_xor, m); }
template <class T> T __shfl_sync(unsigned, T v, int src, int = 32) { return tg_emu::shuffle(v, tg_emu::lane_idx, (unsigned)src); }

template <class T> T atomicAdd(T *address, T value) {
    std::lock_guard<std::mutex> g(tg_emu::atomic_lock());
    T old = *address;
    *address = old + value;
    return old;
}
template <class T> T atomicMax(T *address, T value) {
    std::lock_guard<std::mutex> g(tg_emu::atomic_lock());
    T old = *address;
    if (value > old) *address = value;
    return old;
}
template <class T> T __ldg(const T *p) { return *p; }

/* The runtime API on host memory. */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};

inline cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> cudaError_t cudaMalloc(T **p, size_t bytes) { return cudaMalloc((void **)p, bytes); }
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
    if (bytes) memmove(dst, src, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void *p, int value, size_t bytes) { memset(p, value, bytes); return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
inline const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }

#endif
