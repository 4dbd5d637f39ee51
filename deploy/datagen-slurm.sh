#!/usr/bin/env bash
# Training data for the network on Slurm: a job array, one task per shard.
#
#   sbatch deploy/datagen-slurm.sh            # 16 tasks, one core each
#   ladder tune merge --out data/net-gen1.txt data/net-gen1/shard-*.txt   # when all are done
#
# ladder reads SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT itself
# (`--shard env`), so the array's range can start at 0 or 1. A task that is requeued or
# resubmitted resumes its own file. The merge refuses a set that is incomplete, overlapping, or
# made by different settings, weights or binaries: run every task with the same binary.
#SBATCH --job-name=ladder-datagen
#SBATCH --array=1-16
#SBATCH --cpus-per-task=1
#SBATCH --mem=512M
#SBATCH --time=2-00:00:00
#SBATCH --requeue
#SBATCH --output=data/net-gen1/slurm-%A_%a.log
set -euo pipefail
LADDER=${LADDER:-ladder}
mkdir -p data/net-gen1
exec "$LADDER" tune datagen \
  --games 1600000 --seed 11 \
  --soft-nodes 5000 --hard-nodes 100000 --random-plies 8 \
  --shard env --threads 1 \
  --out "data/net-gen1/shard-${SLURM_ARRAY_TASK_ID}.txt"
