// Step 2, the article's conditional skip: the same kernel, but a thread whose slot is padding
// (target y2 == 0) writes 0 and 'false' without reading its predicted box or doing the arithmetic.
//
// What it saves: with counts floor(|N(0, 3)|), about 2 of every 256 slots are valid, so 99% of the
// threads skip the pred load and ~40 instructions. What it cannot save: every thread still reads its
// target's y2 (one 32-byte sector per 2 slots), writes a float and a byte, and the second pass
// still reads all B*M slots. The article measured no change (629 -> 623 us): its time was launches
// and the torch reductions, not this arithmetic.
//
// Launch and limits: step 1's (block = M <= 1024, grid = B), then giou_article_reduce from step 1.
#define EPS 1e-5f

__device__ __forceinline__ float compute_giou(const float *box1, const float *box2) {
    const float area1 = (box1[2] - box1[0]) * (box1[3] - box1[1]);
    const float area2 = (box2[2] - box2[0]) * (box2[3] - box2[1]);
    const float inter_w = max(min(box1[2], box2[2]) - max(box1[0], box2[0]), 0.f);
    const float inter_h = max(min(box1[3], box2[3]) - max(box1[1], box2[1]), 0.f);
    const float inter_area = inter_w * inter_h;
    const float union_area = area1 + area2 - inter_area;
    const float iou_val = inter_area / max(union_area, EPS);
    const float enclose_w = max(max(box1[2], box2[2]) - min(box1[0], box2[0]), 0.f);
    const float enclose_h = max(max(box1[3], box2[3]) - min(box1[1], box2[1]), 0.f);
    const float enclose_area = enclose_w * enclose_h;
    return iou_val - (enclose_area - union_area) / max(enclose_area, EPS);
}

extern "C" __global__ void giou_article_skip(const float *boxes1, const float *boxes2, float *giou, unsigned char *mask) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = boxes2[4 * idx + 3] != 0;
    mask[idx] = valid;
    if (valid) {
        giou[idx] = compute_giou(&boxes1[idx * 4], &boxes2[idx * 4]);
    } else {
        giou[idx] = 0;
    }
}
