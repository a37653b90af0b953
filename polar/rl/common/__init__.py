"""What every algorithm shares: observations and their encoders, networks, distributions,
optimiser steps, rollouts (serial and Ray workers), batches, the replay buffer, evaluation,
checkpoints and the run log."""
