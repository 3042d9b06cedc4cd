"""resumable-training: a training loop that survives being killed (SIGKILL) at any moment."""

def train(setup, ckpt_dir, total_steps):
    """Train setup.model for total_steps optimizer steps, saving checkpoints in ckpt_dir
    (at least every setup.checkpoint_every steps) and resuming from the newest one.

    Each step: loss = setup.loss_fn(setup.model(x), y); zero the grads; loss.backward();
    setup.optimizer.step(); setup.scheduler.step(); setup.log(step, loss.item()).
    Epoch e reads setup.make_loader(e) in order. When train returns, setup.model holds the
    final parameters, also when a restart finds the run already complete.
    """
    # 1. If ckpt_dir holds a checkpoint, load model, optimizer, scheduler, the position
    #    (step, epoch, batches consumed in that epoch) and the RNG states (torch, random,
    #    numpy).
    # 2. Re-create the epoch's loader, iterate past the consumed batches, and only then
    #    restore the RNG states (loading the skipped samples draws from them too).
    # 3. Train; save a checkpoint atomically (temporary file in ckpt_dir, flush, fsync,
    #    os.replace) at least every setup.checkpoint_every steps; keep at most two.
    raise NotImplementedError("write train")
