// Step 1, the article's fused kernel as written (Chaim Rand's GIoU extension), with its torch
// calls replaced by our second pass.
//
// One block per image and one thread per box SLOT of the padded batch (blockDim = M, the padded box
// count: 256 in the article). A slot is valid when its target's y2 is not zero (the padding is all
// zeros); the thread writes its GIoU times valid and the valid flag. The article then calls torch
// three more times (mask.sum(), giou.sum(), a division): giou_article_reduce is that second pass in
// one kernel, a single block of 1024 threads that sums both arrays in a fixed order and writes
// loss = mean(1 - GIoU) over the valid boxes = (count - sum) / max(count, 1). (The article's own
// function returns the mean GIoU; 1 minus it is the loss.)
//
// Why faster than PyTorch's padded loss: about thirty elementwise kernels, each reading and writing
// (B, 256) arrays, become one. Limits: M <= 1024 (one thread per slot), a valid target must have
// y2 != 0; the float32 inputs are padded, so every slot is read, valid or not. The reduction pass
// is one block: about B*M/1024 elements per thread.
#define EPS 1e-5f

extern "C" __global__ void giou_article(const float *boxes1, const float *boxes2, float *giou, unsigned char *mask) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = boxes2[4 * idx + 3] != 0;
    mask[idx] = valid;
    const float epsilon = EPS;
    const float *box1 = &boxes1[idx * 4];
    const float *box2 = &boxes2[idx * 4];
    float area1 = (box1[2] - box1[0]) * (box1[3] - box1[1]);
    float area2 = (box2[2] - box2[0]) * (box2[3] - box2[1]);
    float left = max(box1[0], box2[0]);
    float top = max(box1[1], box2[1]);
    float right = min(box1[2], box2[2]);
    float bottom = min(box1[3], box2[3]);
    float inter_w = max(right - left, 0.f);
    float inter_h = max(bottom - top, 0.f);
    float inter_area = inter_w * inter_h;
    float union_area = area1 + area2 - inter_area;
    float iou_val = inter_area / max(union_area, epsilon);
    float enclose_left = min(box1[0], box2[0]);
    float enclose_top = min(box1[1], box2[1]);
    float enclose_right = max(box1[2], box2[2]);
    float enclose_bottom = max(box1[3], box2[3]);
    float enclose_w = max(enclose_right - enclose_left, 0.f);
    float enclose_h = max(enclose_bottom - enclose_top, 0.f);
    float enclose_area = enclose_w * enclose_h;
    float result = iou_val - (enclose_area - union_area) / max(enclose_area, epsilon);
    giou[idx] = result * valid;
}

// The second pass: one block of 1024 threads (a power of two), n = B*M slots. Thread t sums slots
// t, t+1024, ... (fixed order), then a shared-memory tree: the result does not depend on timing.
extern "C" __global__ void giou_article_reduce(const float *__restrict__ giou, const unsigned char *__restrict__ mask,
                                               float *__restrict__ loss, long long n) {
    __shared__ float s_sum[1024];
    __shared__ int s_cnt[1024];
    float s = 0.f;
    int c = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        s += giou[i];
        c += mask[i];
    }
    s_sum[threadIdx.x] = s;
    s_cnt[threadIdx.x] = c;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + h];
            s_cnt[threadIdx.x] += s_cnt[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const int cnt = s_cnt[0];
        loss[0] = cnt > 0 ? ((float)cnt - s_sum[0]) / (float)cnt : 0.f;
    }
}
