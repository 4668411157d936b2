#!/usr/bin/env bash
# Usage: serve_weights_roundtrip.sh SERVE WORKDIR
# examples/serve with a Qwen2-shaped config.json (q/k/v biases, untied lm head, GQA): its random
# weights saved as safetensors under the Hugging Face names, then served again from that file, must
# give the same tokens (the digest line) — the loader reads what the writer wrote, name by name —
# from the config.json it wrote; the run's requests and first logits (5 x 300 floats) are saved.
set -euo pipefail
serve=$1 dir=$2
mkdir -p "$dir"
cat >"$dir/config.json" <<'JSON'
{"model_type": "qwen2", "hidden_size": 96, "intermediate_size": 160, "num_hidden_layers": 2,
 "num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 512,
 "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false}
JSON
common=(--config "$dir/config.json" --dtype f32 --requests 5 --prompt-min 3 --prompt-max 30 --max-new 8 --chunk 16)
first=$(BACKEND_TYPE=cpu "$serve" "${common[@]}" --seed 7 --save "$dir")
second=$(BACKEND_TYPE=cpu "$serve" "${common[@]}" --seed 7 --weights "$dir/model.safetensors")
a=$(grep '^tokens digest:' <<<"$first") b=$(grep '^tokens digest:' <<<"$second")
echo "random weights: $a; loaded: $b"
[ -n "$a" ] && [ "$a" = "$b" ]
[ "$(stat -c %s "$dir/first_logits.f32")" -eq $((5 * 300 * 4)) ]
[ "$(grep -c '"generated": \[' "$dir/requests.json")" -eq 5 ]
