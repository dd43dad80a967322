//! The banner printed when `iggy` runs without a command (spec §2.3): the
//! figlet "standard" rendering of "Iggy CLI", the help without its options
//! section, and pointers to more help.

/// Six lines of figlet "standard" text, trailing spaces kept.
pub const ART: &str = concat!(
    " ___                     ____ _     ___ \n",
    "|_ _|__ _  __ _ _   _   / ___| |   |_ _|\n",
    " | |/ _` |/ _` | | | | | |   | |    | | \n",
    " | | (_| | (_| | |_| | | |___| |___ | | \n",
    "|___\\__, |\\__, |\\__, |  \\____|_____|___|\n",
    "    |___/ |___/ |___/                   \n",
);

pub const FOOTER: &str = "\n\nRun 'iggy --help' for full help message.\nRun 'iggy COMMAND --help' for more information on a command.\n\nFor more help on what's Iggy and how to use it, head to https://iggy.apache.org";
