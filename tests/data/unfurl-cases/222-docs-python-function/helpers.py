def double(ctx, args):
    return args * 2
