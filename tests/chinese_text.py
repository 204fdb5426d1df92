"""A named Chinese test text for whole-word masking (tests/test_word_segmenter.py and the Beam twin)."""

# The test text: the opening of Lu Xun's 狂人日记 (A Madman's Diary, 1918; public domain), chapters 1 and 2.
MADMAN = ("今天晚上，很好的月光。我不见他，已是三十多年；今天见了，精神分外爽快。才知道以前的三十多年，全是发昏；"
          "然而须十分小心。不然，那赵家的狗，何以看我两眼呢？我怕得有理。\n\n"
          "今天全没月光，我知道不妙。早上小心出门，赵贵翁的眼色便怪：似乎怕我，似乎想害我。还有七八个人，交头接耳的"
          "议论我，又怕我看见。一路上的人，都是如此。其中最凶的一个人，张着嘴，对我笑了一笑；我便从头直冷到脚根，"
          "晓得他们布置，都已妥当了。")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
