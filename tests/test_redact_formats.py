"""Secret formats in the places logs really carry them, and the look-alikes that must stay.

Each true-positive secret goes through every position it occurs in (env dumps, argv echoes,
JSON / YAML config echoes, URLs, headers, the final exception line, a line hard-wrapped
through the secret): no fragment of 8 characters may survive. The shapes (prefixes, lengths,
character sets) follow the formats gitleaks and detect-secrets document; the strings are made
up. The false-positive side is what a training log is full of.
"""

import gzip
from pathlib import Path

import pytest

from classifier.redact import redact_lines, redact_text
from conftest import ROOT

# Secrets a format gives away wherever they stand.
FORMAT_SECRETS = {
    "aws-access-key-id": "AKIAQ3EGV7XLWN2HJ5PB",
    "aws-sts-key-id": "ASIAY34FZKBOKMUTVV7A",
    "github-classic": "ghp_R8mXq2LwZ7vNc4Tb9Yk1Hs6Jd3Pf0Ga5Ue8W",
    "github-oauth": "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "github-user-to-server": "ghu_Zq9Lm2Xv7Bn4Kc1Ht6Wy3Rj8Pd5Fs0Ga7Ue2",
    "github-server-to-server": "ghs_Yt5Np8Lk2Vx9Mc6Bq3Wz0Rh7Jf4Dg1Sa8Te5",
    "github-refresh": "ghr_Ks3Wd8Nm1Qx6Vb9Lz4Jt7Rc2Hf5Pg0Ya3Ue6",
    "github-fine-grained": "github_pat_11AB2CD3E0fGhIjKlMnOpQ_rStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "google-api-key": "AIzaSyD4kT8mQ2xZ7vNc9Lb3Hw6Jp1Rf0Gs5Ye8",
    "databricks": "dapi3f9a1c7e5b2d8046a9c1e7f3b5d20864",
    "npm": "npm_Zx8Kq3Lm7Vn2Bc5Hw9Jt4Rp1Df6Gs0Ya3Ue7",
    "pypi": "pypi-AgEIcHlwaS5vcmcCJDk4ZmE3YzEyLTRiNmUtNGQ5MC1hMWYyLTNjNWU3ZDhiOWEwMQACKlszLCJh",
    "slack-bot": "xoxb-284917365012-9183746502817-Qw8Ez3Rt6Yu1Io4Pa7Sd2Fg",
    "slack-app": "xapp-1-A0123BCDE45-6789012345678-9f8e7d6c5b4a39281706",
    "slack-webhook": "https://hooks.slack.com/services/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",
    "jwt-k8s-service-account": ("eyJhbGciOiJSUzI1NiIsImtpZCI6IlhRNkV6In0.eyJpc3MiOiJrdWJlcm5ldGVzL3Nl"
                                "cnZpY2VhY2NvdW50In0.Tm90QVJlYWxTaWduYXR1cmVCdXRMb25nRW5vdWdo"),
    "huggingface": "hf_Qw8Er3Ty6Ui1Op4As7Df2Gh5Jk9Lz0Xc3Vb",
    "openai": "sk-proj-Xq7Lw2Zm9Vn4Bc1Ht6Rp3Jd8Kf5Gs0Ya2Ue7",
    "gitlab": "glpat-Zq8Xw3Lk7Vn2Bc5Ht9Jp",
    "neptune": "eyJhcGlfYWRkcmVzcyI6Imh0dHBzOi8vYXBwLm5lcHR1bmUuYWkiLCJhcGlfa2V5IjoiNzNhYiJ9",
}

# Positions any secret may stand in: where the log says what it is, or not at all.
FORMAT_POSITIONS = {
    "exception": "[rank0]: RuntimeError: request rejected for {s}",
    "env": "export SERVICE_TOKEN={s}; export NCCL_DEBUG=INFO",
    "argv": "launch.py --master_port 29500 --hub_token {s} --bf16",
    "argv-eq": "run.py --api-key={s} --epochs 3",
    "argv-list": "sys.argv = ['train.py', '--token', '{s}', '--seed', '1']",
    "json": '{{"run": 3, "auth_token": "{s}", "rank": 0}}',
    "yaml": "  api_key: {s}",
    "header": "send: b'GET /v1 HTTP/1.1\\r\\nAuthorization: Bearer {s}\\r\\n'",
    "url": "fatal: unable to access 'https://oauth2:{s}@git.example.com/org/repo.git/'",
}

# Secrets only their context gives away: the key before them, or the URL they sit in.
CONTEXT_CASES = {
    "aws-secret-env": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lw2Xm4V",
    "aws-secret-ini": "aws_secret_access_key = je7MtGbClwBF/2Zp9Utk/h3yCo8nvbXq5Lm1Rt7W",
    "aws-session-json": '"SessionToken": "FwoGZXIvYXdzELr3Kq9Vn2Bc7Ht5Rp1Jd8Kf4Gs0Ya6Ue3Mx=="',
    "azure-account-key": ("DefaultEndpointsProtocol=https;AccountName=ckpt;AccountKey=Zq8Xw3Lk7Vn2Bc5Ht9Jp"
                          "4Rd1Fg6Sa0Ye3Um8Qi2Wo7Tz5Kx1Nv9Lb4Hc6Jm3Pd8Rg==;EndpointSuffix=core.windows.net"),
    "azure-sas": ("https://ckpt.blob.core.windows.net/run/model.pt?sv=2022-11-02&sp=r&se=2026-01-01"
                  "&sig=Kq9Vn2Bc7Ht5Rp1Jd8Kf4Gs0Ya6Ue3Mx%2BLw%3D"),
    "bearer-header": "Authorization: Bearer Zx8Kq3Lm7Vn2Bc5Hw9Jt4Rp1",
    "bearer-bare": "401 Unauthorized (sent Bearer Lm7Vn2Bc5Hw9Jt4Rp1Zx8Kq3)",
    "gcp-private-key-id": '"private_key_id": "4c1e9a7f3b5d2e8c6a0f1b3d5e7a9c2e4f6b8d0a",',
    "gcp-private-key": ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'
                        'BKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n",'),
    "wandb-env": "WANDB_API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    "wandb-login": "wandb login --relogin 0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
    "comet-env": "COMET_API_KEY=Qx7Lw2Zm9Vn4Bc1Ht6Rp3Jd8K",
    "comet-kwarg": 'comet_ml.Experiment(api_key="Rt6Yu1Io4Pa7Sd2Fg5Hj8Kl3Z", project_name="x")',
    "neptune-env": "NEPTUNE_API_TOKEN=Vn4Bc1Ht6Rp3Jd8KfQx7Lw2Zm9",
    "slurm-jwt": "SLURM_JWT=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.Zm9vYmFyYmF6cXV4MDEyMzQ1",
    "password-arg": "torchrun train.py --db-password Tr0ub4dor-3x7 --nproc 8",
    "password-arg-eq": "mlflow server --password=Tr0ub4dor-3x7",
    "password-argv-list": "['--password', 'Tr0ub4dor-3x7', '--port', '5432']",
    "password-env": "export MLFLOW_TRACKING_PASSWORD=Tr0ub4dor-3x7",
    "password-yaml": "  password: Tr0ub4dor-3x7",
    "password-json": '{"user": "ml", "password": "Tr0ub4dor-3x7"}',
    "secret-kv": "client_secret=Tr0ub4dor-3x7 scope=read",
    "credential-json": '"credential": "Tr0ub4dor-3x7"',
    "redis-url": "redis.exceptions.ConnectionError: Error connecting to redis://:Tr0ub4dor-3x7@10.0.0.5:6379/0",
    "postgres-url": "sqlalchemy: postgresql://mlflow:Tr0ub4dor-3x7@db.internal:5432/mlflow",
    "basic-auth-url": "pip: https://deploy:Tr0ub4dor-3x7@pypi.internal.example/simple",
    "hf-git-url": "git clone https://user:hf_Qw8Er3Ty6Ui1Op4As7Df2Gh5Jk9Lz0Xc3Vb@huggingface.co/org/model",
    "token-near-word": "ValueError: the token Xk29dLq0vB7mNpC2aR8sT4uW1yZ6 was revoked",
}
CONTEXT_SECRETS = {
    "aws-secret-env": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lw2Xm4V",
    "aws-secret-ini": "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbXq5Lm1Rt7W",
    "aws-session-json": "FwoGZXIvYXdzELr3Kq9Vn2Bc7Ht5Rp1Jd8Kf4Gs0Ya6Ue3Mx==",
    "azure-account-key": "Zq8Xw3Lk7Vn2Bc5Ht9Jp4Rd1Fg6Sa0Ye3Um8Qi2Wo7Tz5Kx1Nv9Lb4Hc6Jm3Pd8Rg==",
    "azure-sas": "Kq9Vn2Bc7Ht5Rp1Jd8Kf4Gs0Ya6Ue3Mx%2BLw%3D",
    "bearer-header": "Zx8Kq3Lm7Vn2Bc5Hw9Jt4Rp1",
    "bearer-bare": "Lm7Vn2Bc5Hw9Jt4Rp1Zx8Kq3",
    "gcp-private-key-id": "4c1e9a7f3b5d2e8c6a0f1b3d5e7a9c2e4f6b8d0a",
    "gcp-private-key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "wandb-env": "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    "wandb-login": "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
    "comet-env": "Qx7Lw2Zm9Vn4Bc1Ht6Rp3Jd8K",
    "comet-kwarg": "Rt6Yu1Io4Pa7Sd2Fg5Hj8Kl3Z",
    "neptune-env": "Vn4Bc1Ht6Rp3Jd8KfQx7Lw2Zm9",
    "slurm-jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.Zm9vYmFyYmF6cXV4MDEyMzQ1",
    "hf-git-url": "hf_Qw8Er3Ty6Ui1Op4As7Df2Gh5Jk9Lz0Xc3Vb",
    "token-near-word": "Xk29dLq0vB7mNpC2aR8sT4uW1yZ6",
}
PASSWORD = "Tr0ub4dor-3x7"

# Lines a training log is full of that must come out unchanged, alone and next to each other.
LOOK_ALIKES = [
    "commit 3f9a1c7e5b2d8046a9c1e7f3b5d20864f1e2d3c4 (HEAD -> main, origin/main)",
    "DeepSpeed git hash: 9c2f5d1e, git branch: master, version 0.14.2+9c2f5d1e",
    "RuntimeError: shape '[4096, 11008]' is invalid for input of size 45088768 torch.Size([8, 2048, 4096])",
    "gpu-node-01:1234:1301 [0] NCCL INFO comm 0x55d5c7a0b2f0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x8d2bd3f8c1d0d76b - Init COMPLETE",
    "NCCL INFO ncclCommInitRank comm 0x7f3a9c000b90 rank 3 nranks 8 cudaDev 3 busId 3d000 commId 0xa1b2c3d4e5f60718 - Init START",
    "CUDA error: an illegal memory access was encountered at 0x7f4e1c000000 (address 0x0000564a2bd1e8f0)",
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5e3c9d2a-1b4f-4c8e-9a7d-0f6e5d4c3b2a)",
    "MIG-GPU-3c1a2b4d-5e6f-7081-92a3-b4c5d6e7f809/1/0 in use",
    "Saving checkpoint to /mnt/ckpt/llama-7b/global_step12000/mp_rank_00_model_states.pt",
    "loading /data/ckpt/zero_pp_rank_3_mp_rank_00_optim_states.pt key model.layers.31.self_attn.q_proj.weight",
    "tokenizer: LlamaTokenizerFast(name_or_path='meta-llama/Llama-2-7b-hf', vocab_size=32000, model_max_length=4096)",
    "generation_config: max_tokens=2048 max_new_tokens=512 pad_token_id=0 eos_token_id=2 bos_token=<s>",
    "TOKENIZERS_PARALLELISM=false MAX_JOBS=8 OMP_NUM_THREADS=4",
    "train.py --tokenizer_name gpt2 --max_tokens 4096 --use_auth_token --pad_token 0",
    "Token indices sequence length is longer than the specified maximum sequence length (5123 > 4096)",
    "KeyError: 'model.layers.11.mlp.down_proj.weight'",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Downloading shards: 100%|██████████| 2/2 [00:12<00:00,  6.01s/it] etag 4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f",
    "Using DeepSpeed Optimizer param name adamw as basic optimizer",
    "wandb: Run data is saved locally in /workspace/wandb/run-20240101_120000-3f2a9c1d",
    "export NCCL_SOCKET_IFNAME=eth0; export MASTER_PORT=29500; export PWD=/workspace",
    "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 2/16 clients joined.",
    "HF_TOKEN=$HF_TOKEN WANDB_API_KEY=${WANDB_API_KEY} password: None",
    "Authorization: Bearer <token>",
    "Successfully installed deepspeed-0.14.2 ninja-1.11.1.1 hjson-3.1.0 py-cpuinfo-9.0.0 pydantic-2.6.1",
    "[2024-05-01 12:00:00,123] [INFO] [launch.py:256:main] process 12345 spawned with command: ['/usr/bin/python', '-u', 'train.py', '--local_rank=0', '--deepspeed', 'ds_config.json']",
]


def _fragments(secret, width=8):
    return {secret[i:i + width] for i in range(len(secret) - width + 1)}


def _leaks(secret, *texts):
    return sorted(f for f in _fragments(secret) if any(f in t for t in texts))


def _wrapped(line, secret):
    """The line cut through the middle of the secret, as a hard wrap would cut it."""
    cut = line.index(secret) + len(secret) // 2
    pad = max(0, 60 - cut)  # a wrapped line is a long one
    line = "x" * pad + " " + line if pad else line
    cut += pad + 1 if pad else 0
    return line[:cut], line[cut:]


# What must not survive, where the format's text holds more than the secret.
SECRET_PART = {"slack-webhook": "T04PQ7XK2/B06RM3ZL9/Hq7Wx2Lk9Vn4Bc6Zt1Rp3Jd8"}
FORMAT_CASES = [(f"{fmt}-{pos}", SECRET_PART.get(fmt, text), template.format(s=text))
                for fmt, text in FORMAT_SECRETS.items() for pos, template in FORMAT_POSITIONS.items()]


@pytest.mark.parametrize("secret,line", [c[1:] for c in FORMAT_CASES], ids=[c[0] for c in FORMAT_CASES])
def test_format_secret_leaves_no_fragment_on_its_line_or_wrapped(secret, line):
    out = redact_text(line)
    assert "[REDACTED:" in out and not _leaks(secret, out), out
    halves = redact_lines(_wrapped(line, secret))
    assert not _leaks(secret, *halves), halves


@pytest.mark.parametrize("case", sorted(CONTEXT_CASES))
def test_context_secret_leaves_no_fragment_on_its_line_or_wrapped(case):
    line = CONTEXT_CASES[case]
    secret = CONTEXT_SECRETS.get(case, PASSWORD)
    out = redact_text(line)
    assert "[REDACTED:" in out and not _leaks(secret, out), out
    halves = redact_lines(_wrapped(line, secret))
    assert not _leaks(secret, *halves), halves


@pytest.mark.parametrize("line", LOOK_ALIKES, ids=range(len(LOOK_ALIKES)))
def test_look_alike_is_left_alone(line):
    assert redact_text(line) == line


def test_look_alikes_hard_wrapped_are_left_alone():
    # every look-alike cut at column 40 and read back as a pair, and all of them in a row
    for line in LOOK_ALIKES:
        if len(line) > 44:
            pair = [line[:40], line[40:]]
            assert redact_lines(pair) == pair
    assert redact_lines(LOOK_ALIKES) == LOOK_ALIKES


def _corpus_logs():
    for path in sorted((ROOT / "corpus").rglob("*.log*")):
        if path.name.endswith((".log", ".log.gz")):
            yield path


# Corpus lines the redactor masks although they hold no real secret: a token-shaped value right
# after a secret word. Masking such a value costs a reader little; letting a token through would
# cost much, so these stay masked, and any other change to the corpus is a failure.
_MASKED_ON_PURPOSE = {
    # test-side pastes of the seventy-sixth to seventy-ninth harvests with a password flag or a
    # secret-shaped value the redactor masks (the lines are held out: named, not described)
    "corpus/public/connection_failure/ray-project__ray__8054.log:9",
    "corpus/public/connection_failure/ray-project__ray__8054.log:11",
    "corpus/public/connection_failure/OpenRLHF__OpenRLHF__376.log:3",
    "corpus/public/port_conflict/chatchat-space__Langchain-Chatchat__44.log:1",
    # an HfArgumentParser refusal listing flags named like keys (`--ground_truths_key`,
    # `--sft_messages_key`): a `*_key` flag's value is masked, the safe side for a column name
    "corpus/public/config_field_error/allenai__open-instruct__620.log:9",
    # a Taskcluster worker's temporary client id after "credentials:" (mixed case and digits
    # over 60 characters; the client id is public, its access token is not printed)
    "corpus/public/gpu_hardware/mozilla__translations__1002.log:4",
    # Ray's documented default Redis password on a `ray start --redis-password` command line
    "corpus/public/connection_failure/ray-project__ray__28372.log:2",
    # a local Jupyter server's login URL with its `?token=` (localhost, the token in the thread)
    # a web UI's `--gradio-auth user:password` on its launch line (a throwaway `a:a`, still a
    # password by its flag)
    "corpus/public/none/sagiodev__stablediffusion_webui__9.log:1",
    "corpus/public/none/kylebarron__stata_kernel__263.log:12",
    "corpus/public/none/kylebarron__stata_kernel__263.log:13",
    # the same kind of local Jupyter login URL with its token (harvest 53c)
    "corpus/public/none/ipython__ipykernel__488.log:5",
    "corpus/public/none/ipython__ipykernel__488.log:6",
    # a database password in a source line the traceback shows (`password='...'`, harvest 55c)
    "corpus/public/unknown/akaraspt__deepsleepnet__2.log:4",
    # a keyword argument passing a variable of its own name (`add_to_git_credential=
    # add_to_git_credential)`): masked by its key, as any `*_credential=` value (harvest 55e)
    "corpus/public/env_var_missing/validatedpatterns__rag-llm-gitops__70.log:8",
    # the same in a Hub call a traceback shows (`get_hf_file_metadata(url, token=token)`, harvest 65a)
    "corpus/public/unknown/oobabooga__textgen__6044.log:18",
}


def test_redaction_changes_no_line_of_the_corpus():
    # The corpus holds no real secret; every line, and every pair of neighbouring lines (the
    # hard-wrap join), must come out exactly as it went in, but for the lines masked on purpose.
    changed = []
    for path in _corpus_logs():
        data = gzip.open(path, "rb").read() if path.suffix == ".gz" else path.read_bytes()
        lines = data.decode("utf-8", "replace").splitlines()
        for i, (before, after) in enumerate(zip(lines, redact_lines(lines)), 1):
            if before != after:
                changed.append(f"{Path(path).relative_to(ROOT).as_posix()}:{i}")
    assert len(list(_corpus_logs())) > 800
    assert set(changed) == _MASKED_ON_PURPOSE
