"""The Python trainers' command lines: one line on stderr and exit status 2 for a bad flag, as
unet3d-train gives, instead of argparse's usage block."""
import argparse


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def int_at_least(minimum):
    """An argparse type: an integer of at least `minimum`."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        return value
    return parse
