"""Non-pretrained neural readers (RaSoR, BiDAF, DrQA, ...) and what they share."""
